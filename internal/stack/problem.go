package stack

import (
	"fmt"
	"strings"
)

// Problem is one defect of a stack directory: the file it is in (slash-separated and relative
// to the stack directory, e.g. "cluster-class/Chart.yaml"; a directory ends in "/"; empty for
// the stack as a whole) and what is wrong with it.
//
// A Problem is an error, so a caller that only wants the first one can return it as is.
type Problem struct {
	File    string `json:"file"`
	Message string `json:"message"`
}

// Error formats the problem as "file: message".
func (p Problem) Error() string {
	if p.File == "" {
		return p.Message
	}
	return p.File + ": " + p.Message
}

// String is Error.
func (p Problem) String() string { return p.Error() }

// Problems is every problem found in a stack directory, in a stable order. Load returns it
// as its error; use errors.As to get at the individual problems.
type Problems []Problem

// Error joins the problems, one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, or nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// problems collects problems while a stack is read.
type problems struct {
	list Problems
	seen map[Problem]bool
}

func (c *problems) addf(file, format string, args ...any) {
	c.add(Problem{File: file, Message: fmt.Sprintf(format, args...)})
}

func (c *problems) add(p Problem) {
	if c.seen == nil {
		c.seen = map[Problem]bool{}
	}
	if c.seen[p] {
		return
	}
	c.seen[p] = true
	c.list = append(c.list, p)
}
