package dashboard

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// pageNames are the pages, each templates/<name>.html defining "main", rendered in layout.html.
var pageNames = []string{"fleet", "stack", "cluster", "operators", "operator", "notfound"}

// shapes show a bucket by shape as well as by colour and word.
var shapes = map[string]string{
	BucketDegraded:    "▲",
	BucketProgressing: "◐",
	BucketAvailable:   "●",
	BucketOther:       "○",
}

// phaseShapes show a wave's phase by shape.
var phaseShapes = map[string]string{
	"Pending": "○", "Proposed": "◇", "Rolling": "◐", "Soaking": "◑", "Done": "●", "Halted": "▲",
}

// stateChoiceText is how the cluster list's state filter names its choices.
var stateChoiceText = map[string]string{
	StateFailing: "not Available", StateAll: "all",
	BucketDegraded: "Degraded", BucketProgressing: "Progressing", BucketOther: "Other", BucketAvailable: "Available",
}

// timeSince is the argument of the "since" template: a time and the page's now.
type timeSince struct {
	Now, T time.Time
}

// listArgs is the argument of the "clusterlist" template.
type listArgs struct {
	Path string
	List ClusterList
	Now  time.Time
}

var funcs = template.FuncMap{
	"bucket":       BucketOf,
	"buckets":      func() []string { return buckets },
	"shape":        func(b string) string { return shapes[b] },
	"phaseShape":   func(p string) string { return phaseShapes[p] },
	"stateChoices": func() []string { return StateChoices },
	"stateChoice":  func(s string) string { return stateChoiceText[s] },
	"pct":          func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"join":         strings.Join,
	"lower":        strings.ToLower,
	"add":          func(a, b int) int { return a + b },
	"sub":          func(a, b int) int { return a - b },
	"yesno": func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	},
	"short": func(s string) string { return s[:min(len(s), 12)] },
	"when":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"clock": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"ago":   func(now, t time.Time) string { return age(now.Sub(t)) + " ago" },
	"until": func(now, t time.Time) string { return age(t.Sub(now)) },
	"since": func(now, t time.Time) timeSince { return timeSince{Now: now, T: t} },
	"listArgs": func(path string, l ClusterList, now time.Time) listArgs {
		return listArgs{Path: path, List: l, Now: now}
	},
	"pageURL": func(path string, q Query, p int) string {
		if v := q.Values(p).Encode(); v != "" {
			return path + "?" + v
		}
		return path
	},
	"stackFilter": func(ns, name string) string {
		return "/?" + Query{State: StateAll, Stack: ns + "/" + name}.Values(1).Encode() + "#clusters-h"
	},
}

// age is a duration as a person reads it: "45s", "12m", "3h10m", "5d".
func age(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// parsePages parses layout.html with each page's template.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse layout: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("dashboard: clone layout: %w", err)
		}
		if pages[name], err = t.ParseFS(templateFS, "templates/"+name+".html"); err != nil {
			return nil, fmt.Errorf("dashboard: parse page %s: %w", name, err)
		}
	}
	return pages, nil
}
