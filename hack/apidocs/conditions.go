package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
)

// The generator's own markers on the constants of the API package:
//
//	+docs:kinds=ClusterStack,ClusterAddon    on a condition type: the kinds that have it
//	+docs:mirrors=Degraded,Progressing       on a condition type: it repeats the reason of these
//	+docs:on=ClusterAddon/ReleaseReady,...   on a reason: the kinds and conditions it is set on
//	                                         ("none": no controller sets it)
//
// and the sentence "What to do: ..." in the godoc of every reason and update risk.
const (
	kindsMarker   = "docs:kinds"
	mirrorsMarker = "docs:mirrors"
	onMarker      = "docs:on"
	whatToDo      = "What to do:"
	// riskType is the type of the conditional update risks.
	riskType = "UpdateRiskType"
)

// externalConsts resolves the constants the API takes from other packages.
var externalConsts = map[string]string{
	"meta.ReadyCondition":       meta.ReadyCondition,
	"meta.StalledCondition":     meta.StalledCondition,
	"meta.ReconcilingCondition": meta.ReconcilingCondition,
}

// conditionType is a condition type constant.
type conditionType struct {
	*constDecl
	Type    string   // the condition type's value, e.g. "Available"
	Kinds   []string // kinds that have it
	Mirrors []string // for summary conditions: the conditions whose reason they repeat
}

// reason is a reason constant, or an update risk.
type reason struct {
	*constDecl
	Meaning, WhatToDo string
	// On are "<Kind>/<Condition>" pairs.
	On []string
}

// conditionsModel is what conditions.md is written from.
type conditionsModel struct {
	Kinds      []string
	Conditions []*conditionType
	Reasons    []*reason // sorted by value
	Risks      []*reason // in source order
}

// buildConditions reads the condition types, reasons and risks of the API package and checks
// their docs markers.
func buildConditions(p *apiPackage) (*conditionsModel, error) {
	m := &conditionsModel{}
	kinds := map[string]bool{}
	for _, k := range p.kinds() {
		m.Kinds = append(m.Kinds, k.Name)
		kinds[k.Name] = true
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	byType := map[string]*conditionType{}
	for _, c := range p.Consts {
		if c.Type != "" || !strings.HasSuffix(c.Name, "Condition") {
			continue
		}
		ct := &conditionType{constDecl: c, Type: c.Value}
		if v, ok := externalConsts[c.Value]; ok {
			ct.Type = v
		} else if strings.Contains(c.Value, ".") {
			bad("%s: value %s is a constant of another package the generator does not know: add it to externalConsts", c.Name, c.Value)
		}
		v, ok := c.Markers.get(kindsMarker)
		if !ok {
			bad("%s: no +%s=<Kind>,... marker saying which kinds have the condition", c.Name, kindsMarker)
		}
		for _, k := range splitList(value(v)) {
			if !kinds[k] {
				bad("%s: +%s names %q, which is no kind of the API", c.Name, kindsMarker, k)
			}
			ct.Kinds = append(ct.Kinds, k)
		}
		if v, ok := c.Markers.get(mirrorsMarker); ok {
			ct.Mirrors = splitList(value(v))
		}
		if c.Doc == "" {
			bad("%s: no godoc", c.Name)
		}
		byType[ct.Type] = ct
		m.Conditions = append(m.Conditions, ct)
	}
	for _, ct := range m.Conditions {
		for _, mir := range ct.Mirrors {
			if byType[mir] == nil {
				bad("%s: +%s names %q, which is no condition type", ct.Name, mirrorsMarker, mir)
			}
		}
	}
	hasCondition := func(kind, cond string) bool {
		ct := byType[cond]
		return ct != nil && contains(ct.Kinds, kind)
	}
	for _, c := range p.Consts {
		isReason := c.Type == "" && strings.HasPrefix(c.Name, "Reason")
		isRisk := c.Type == riskType
		if !isReason && !isRisk {
			continue
		}
		r := &reason{constDecl: c}
		meaning, todo, ok := strings.Cut(constMeaning(c), whatToDo)
		if !ok {
			bad("%s: its godoc has no %q sentence", c.Name, whatToDo)
		}
		r.Meaning, r.WhatToDo = strings.TrimSpace(meaning), strings.TrimSpace(todo)
		if r.Meaning == "" || (ok && r.WhatToDo == "") {
			bad("%s: its godoc must say what the reason means, then %q and what to do", c.Name, whatToDo)
		}
		if isRisk {
			m.Risks = append(m.Risks, r)
			continue
		}
		v, ok := c.Markers.get(onMarker)
		if !ok {
			bad("%s: no +%s=<Kind>/<Condition>,... marker (or \"none\")", c.Name, onMarker)
		}
		if v = value(v); v != "none" {
			for _, pair := range splitList(v) {
				kind, cond, _ := strings.Cut(pair, "/")
				switch {
				case !kinds[kind]:
					bad("%s: +%s names %q, whose kind is no kind of the API", c.Name, onMarker, pair)
				case !hasCondition(kind, cond):
					bad("%s: +%s names %q, but %s has no condition %s (see the +%s markers)", c.Name, onMarker, pair, kind, cond, kindsMarker)
				case len(byType[cond].Mirrors) > 0:
					bad("%s: +%s names %q, but %s repeats the reasons of %s: name those", c.Name, onMarker, pair, cond, strings.Join(byType[cond].Mirrors, ", "))
				}
				r.On = append(r.On, pair)
			}
		}
		m.Reasons = append(m.Reasons, r)
	}
	seen := map[string]string{}
	for _, r := range m.Reasons {
		if other, ok := seen[r.Value]; ok {
			bad("%s and %s have the same value %q", other, r.Name, r.Value)
		}
		seen[r.Value] = r.Name
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("condition and reason docs in the API package:\n  %s", strings.Join(problems, "\n  "))
	}
	sort.Slice(m.Reasons, func(i, j int) bool { return m.Reasons[i].Value < m.Reasons[j].Value })
	return m, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func reasonAnchor(value string) string { return "reason-" + strings.ToLower(value) }

func reasonLink(r *reason) string {
	return fmt.Sprintf("[%s](#%s)", r.Value, reasonAnchor(r.Value))
}

// conditionMeaning is a condition type's godoc with its constant's name replaced by the type
// ("AvailableCondition is True when" -> "Available is True when").
func conditionMeaning(ct *conditionType) string {
	if rest, ok := strings.CutPrefix(ct.Doc, ct.Name); ok {
		return "`" + ct.Type + "`" + rest
	}
	return ct.Doc
}

// renderConditions writes docs/conditions.md.
func renderConditions(p *apiPackage, source string) (string, error) {
	m, err := buildConditions(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	w := &b
	fmt.Fprintf(w, "<!-- Code generated by hack/apidocs from %s. DO NOT EDIT: change the constants' comments and run `make docs`. -->\n\n", source)
	w.WriteString("# Conditions and reasons\n\n")
	fmt.Fprintf(w, "Every condition type and reason the operator sets, per kind, with what to do about it. "+
		"Generated from the constants in [`%s`](../%s) and their godoc, so a new reason cannot be added "+
		"without saying what it means and what to do.\n\n", source, source)
	w.WriteString("Read them with `kubectl get <kind> <name> -o yaml` (`status.conditions`), or all at once with " +
		"`kubectl clusterstack why CLUSTER` and `kubectl clusterstack tree STACK` ([troubleshooting.md](troubleshooting.md)); " +
		"which controller writes which condition is in [status-ownership.md](status-ownership.md). How the conditions relate:\n\n" +
		"- `Available`, `Progressing` and `Degraded` carry the meaning OpenShift gives them on ClusterOperator. " +
		"`Ready`, `Stalled` and `Reconciling` summarise them for kstatus, `kubectl wait` and Flux health checks, " +
		"and repeat the reason of the condition that decides them.\n" +
		"- The other condition types record facts (an input problem, a prerequisite awaited) that the status aggregation " +
		"turns into the three above: an input problem makes the object `Degraded` at once (and `Progressing=False` with the " +
		"same reason); a prerequisite awaited shows in `Progressing`, and in `Degraded` too once the wait outlasts the " +
		"operator's `--degraded-grace-period` (default 5m); a wait for a Flux controller to pick up an object counts against " +
		"`--flux-queue-grace-period` (default 15m) instead ([lifecycle.md](lifecycle.md)).\n" +
		"- On a ClusterStackRelease, a ClusterAddon or a ManagementOperator that has delivered nothing yet, " +
		"`Available=False` repeats the reason of `Degraded` or `Progressing`.\n" +
		"- A ClusterStack's `Degraded` repeats the reason of the first of its releases and ClusterAddons that is Degraded.\n\n")

	w.WriteString("## Condition types\n\n| Condition | Kinds | Meaning |\n|---|---|---|\n")
	for _, ct := range m.Conditions {
		var ks []string
		for _, k := range ct.Kinds {
			ks = append(ks, fmt.Sprintf("[%s](#%s)", k, anchor("Conditions of "+k)))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", code(ct.Type, true), strings.Join(ks, ", "), cell(conditionMeaning(ct)))
	}
	w.WriteString("\n")

	for _, k := range m.Kinds {
		fmt.Fprintf(w, "## Conditions of %s\n\n", k)
		w.WriteString("| Condition | Reasons |\n|---|---|\n")
		for _, ct := range m.Conditions {
			if !contains(ct.Kinds, k) {
				continue
			}
			if len(ct.Mirrors) > 0 {
				var ms []string
				for _, mir := range ct.Mirrors {
					ms = append(ms, code(mir, true))
				}
				fmt.Fprintf(w, "| %s | the reason of %s |\n", code(ct.Type, true), strings.Join(ms, ", "))
				continue
			}
			var rs []string
			for _, r := range m.Reasons {
				if contains(r.On, k+"/"+ct.Type) {
					rs = append(rs, reasonLink(r))
				}
			}
			fmt.Fprintf(w, "| %s | %s |\n", code(ct.Type, true), strings.Join(rs, ", "))
		}
		w.WriteString("\n")
	}

	w.WriteString("## Reasons\n\n")
	w.WriteString("| Reason | Set on | Meaning | What to do |\n|---|---|---|---|\n")
	for _, r := range m.Reasons {
		on := "not set by this version of the operator"
		if len(r.On) > 0 {
			on = setOn(r.On)
		}
		fmt.Fprintf(w, "| <a id=\"%s\"></a>%s | %s | %s | %s |\n", reasonAnchor(r.Value), code(r.Value, true), on,
			cell(upperFirst(r.Meaning)), cell(upperFirst(r.WhatToDo)))
	}
	w.WriteString("\n")

	if len(m.Risks) > 0 {
		w.WriteString("## Conditional update risks\n\n")
		w.WriteString("A ClusterStack lists newer releases that exist but may not be taken in `status.conditionalUpdates`, " +
			"each with the risks (`risks[].type`) that hold it back.\n\n")
		w.WriteString("| Risk | Meaning | What to do |\n|---|---|---|\n")
		for _, r := range m.Risks {
			fmt.Fprintf(w, "| <a id=\"%s\"></a>%s | %s | %s |\n", "risk-"+strings.ToLower(r.Value), code(r.Value, true),
				cell(upperFirst(r.Meaning)), cell(upperFirst(r.WhatToDo)))
		}
		w.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// setOn groups "<Kind>/<Condition>" pairs by kind: "ClusterAddon: `ReleaseReady`, `Degraded`".
func setOn(pairs []string) string {
	var order []string
	byKind := map[string][]string{}
	for _, pair := range pairs {
		kind, cond, _ := strings.Cut(pair, "/")
		if _, ok := byKind[kind]; !ok {
			order = append(order, kind)
		}
		byKind[kind] = append(byKind[kind], code(cond, true))
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, k+": "+strings.Join(byKind[k], ", "))
	}
	return strings.Join(parts, "<br>")
}
