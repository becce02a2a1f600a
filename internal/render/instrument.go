package render

import (
	"text/template"
	"text/template/parse"
)

// instrument changes the parse trees of t and the templates it defines, so that the limits hold
// where text/template calls no function: every action that prints pipes its value through
// outputFunc, which refuses a value that would print larger than the output limit before fmt
// builds its text; every iteration of range and every call of a defined template starts with
// tickFunc, which stops a loop or recursion at the deadline even if it neither calls a
// function nor prints.
func instrument(t *template.Template) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Root == nil {
			continue
		}
		instrumentList(tt.Root)
		tt.Root.Nodes = append([]parse.Node{tickNode(tt.Root.Pos)}, tt.Root.Nodes...)
	}
}

func instrumentList(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if p := n.Pipe; p != nil && len(p.Decl) == 0 && len(p.Cmds) > 0 {
				pos := p.Cmds[len(p.Cmds)-1].Pos
				p.Cmds = append(p.Cmds, command(outputFunc, pos))
			}
		case *parse.IfNode:
			instrumentList(n.List)
			instrumentList(n.ElseList)
		case *parse.WithNode:
			instrumentList(n.List)
			instrumentList(n.ElseList)
		case *parse.RangeNode:
			instrumentList(n.List)
			instrumentList(n.ElseList)
			if n.List != nil {
				n.List.Nodes = append([]parse.Node{tickNode(n.Pos)}, n.List.Nodes...)
			}
		case *parse.ListNode:
			instrumentList(n)
		}
	}
}

// command is a pipeline command calling the function name, placed at pos for error messages.
func command(name string, pos parse.Pos) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{parse.NewIdentifier(name).SetPos(pos)}}
}

// tickNode is the action {{_tick}}, which prints nothing.
func tickNode(pos parse.Pos) *parse.ActionNode {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{command(tickFunc, pos)},
	}}
}
