package render

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline/internal/diagnose"
)

// mostBlockers is how many blockers the text view lists; -o json lists all.
const mostBlockers = 20

// Status prints the status view.
func (p Printer) Status(v diagnose.StatusView) error {
	if ok, err := p.Structured(v); ok {
		return err
	}
	l := &lines{w: p.Out}
	g := v.Progress
	l.f("%s in %s, strategy %s, update revision %s (generation %d, observed %d)", p.bold(v.Workload), v.Namespace, v.Strategy, orNone(g.UpdateRevision), g.Generation, g.ObservedGeneration)
	l.f("Progress: %d of %d updated (replicas %d, partition %d), %d of them available; %d unavailable of maxUnavailable %d%s",
		g.Updated, g.ExpectedUpdated, g.Replicas, g.Partition, g.UpdatedAvailable, g.Unavailable, g.MaxUnavailable, pausedNote(g.Paused))
	l.f("Pods by lifecycle state:")
	tw := tabwriter.NewWriter(p.Out, 0, 4, 2, ' ', 0)
	for _, s := range v.States {
		if l.err == nil {
			_, l.err = fmt.Fprintf(tw, "  %s\t%d\t%s\n", s.State, len(s.Pods), strings.Join(firstN(s.Pods, 10), " "))
		}
	}
	if err := tw.Flush(); l.err == nil {
		l.err = err
	}
	if len(v.Blockers) > 0 {
		l.f("%s", p.yellow("Held up by:"))
		for i, b := range v.Blockers {
			if i == mostBlockers {
				l.f("  ... and %d more (-o json lists them all)", len(v.Blockers)-mostBlockers)
				break
			}
			p.blocker(l, b)
		}
	}
	if v.Controller != "" {
		l.f("Controller: %s", v.Controller)
	}
	if len(v.Warnings) > 0 {
		l.f("Recent warnings:")
		for _, e := range lastN(v.Warnings, 5) {
			l.f("  %s ago  %s  %s: %s", e.Age, p.yellow(e.Reason), e.Regarding, e.Message)
		}
	}
	if v.Done {
		l.f("%s", p.green(v.Summary))
	} else {
		l.f("%s", p.yellow("Waiting: "+v.Summary))
	}
	return l.err
}

func (p Printer) blocker(l *lines, b diagnose.Blocker) {
	who := "rollout"
	if b.Pod != "" {
		who = "pod/" + b.Pod
	}
	since := ""
	if b.For != "" {
		since = "  for " + b.For
	}
	l.f("  %s  %s%s", p.bold(who), p.red(b.Reason), since)
	l.f("    %s", b.Message)
	if b.Remedy != "" {
		l.f("    %s %s", p.green("→"), b.Remedy)
	}
}

// Explain prints the explain view of a pod.
func (p Printer) Explain(v diagnose.PodView) error {
	if ok, err := p.Structured(v); ok {
		return err
	}
	l := &lines{w: p.Out}
	l.f("%s in %s on node %s, owned by %s", p.bold("pod/"+v.Pod), v.Namespace, orNone(v.Node), orNone(v.Owner))
	rev := orNone(v.Revision)
	if v.Revision != "" {
		rev += map[bool]string{true: " (the update revision)", false: " (not the update revision)"}[v.Updated]
	}
	l.f("Phase %s, lifecycle state %s, ready %t, available %t, revision %s", v.Phase, orNone(v.State), v.Ready, v.Available, rev)
	if b := v.Holding; b != nil {
		l.f("%s", p.yellow("Holds its rollout up:"))
		p.blocker(l, *b)
	}
	l.f("Timeline:")
	tw := tabwriter.NewWriter(p.Out, 0, 4, 2, ' ', 0)
	for _, m := range v.Timeline {
		if l.err == nil {
			_, l.err = fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.At.UTC().Format("15:04:05"), p.dim(m.Offset), m.What)
		}
	}
	if err := tw.Flush(); l.err == nil {
		l.err = err
	}
	if len(v.Budgets) == 0 {
		l.f("Budgets: none covers this pod")
	}
	for _, b := range v.Budgets {
		l.f("Budget %s: %s", b.Budget, b.Numbers)
	}
	ev := p.green(v.Eviction)
	if !v.EvictionAdmitted {
		ev = p.red(v.Eviction)
	}
	l.f("Disruption: %s", ev)
	p.placement(l, v.Placement)
	if len(v.Operators) == 0 {
		l.f("Hook operators: no record (hook.lifeline.dev/<name>) on this pod")
	}
	for _, o := range v.Operators {
		s := fmt.Sprintf("Hook operator %s: ", o.Operator)
		if o.Moment != "" {
			s += fmt.Sprintf("completed %s at %s (revision %s)", o.Moment, o.At.UTC().Format("15:04:05"), orNone(o.Revision))
		} else {
			s += "no completed moment"
		}
		if o.Trouble != "" {
			s += "; " + p.red("reports "+o.Trouble)
		}
		l.f("%s", s)
	}
	return l.err
}

func (p Printer) placement(l *lines, pl *diagnose.Placement) {
	if pl == nil {
		l.f("Placement: no PersistentPodState for its workload")
		return
	}
	if !pl.Recorded {
		l.f("Placement: persistentpodstate/%s keeps no record of this pod yet", pl.Record)
		return
	}
	var topo []string
	for _, k := range sortedKeys(pl.Topology) {
		topo = append(topo, k+"="+pl.Topology[k])
	}
	l.f("Placement: persistentpodstate/%s recorded node %s, %s; required %s, preferred %s", pl.Record, orNone(pl.Node),
		orNone(strings.Join(topo, ", ")), orNone(strings.Join(pl.Required, ", ")), orNone(strings.Join(pl.Preferred, ", ")))
}

// Budget prints the budget view.
func (p Printer) Budget(v diagnose.BudgetView) error {
	if ok, err := p.Structured(v); ok {
		return err
	}
	l := &lines{w: p.Out}
	l.f("%s in %s: %s, covering %s", p.bold(v.Budget), v.Namespace, v.Limit, orNone(v.Covers))
	if len(v.ProtectOperations) > 0 {
		l.f("Protects: %s", strings.Join(v.ProtectOperations, ", "))
	}
	allows := p.green(v.Allows)
	if v.UnavailableAllowed <= 0 {
		allows = p.red(v.Allows)
	}
	l.f("Status: unavailableAllowed %d, currentAvailable %d, desiredAvailable %d, totalReplicas %d: %s",
		v.UnavailableAllowed, v.CurrentAvailable, v.DesiredAvailable, v.TotalReplicas, allows)
	for _, c := range v.Conditions {
		l.f("Condition: %s", c)
	}
	l.f("Pods (%d):", len(v.Pods))
	tw := tabwriter.NewWriter(p.Out, 0, 4, 2, ' ', 0)
	for _, pod := range v.Pods {
		avail := p.green("available")
		if !pod.Available {
			avail = p.red("unavailable")
		}
		if l.err == nil {
			_, l.err = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", pod.Pod, orNone(pod.Owner), pod.State, avail)
		}
	}
	if err := tw.Flush(); l.err == nil {
		l.err = err
	}
	if len(v.Disruptions) == 0 {
		l.f("Recorded disruptions: none")
	} else {
		l.f("Recorded disruptions (counted until the pod is seen going, or they expire):")
	}
	for _, d := range v.Disruptions {
		exp := "expires in " + d.ExpiresIn
		if d.ExpiresIn == "expired" {
			exp = "expired, no longer counted"
		}
		l.f("  %s  %s admitted %s, %s", d.Pod, d.Kind, d.Admitted.UTC().Format("15:04:05"), exp)
	}
	if len(v.Refusals) > 0 {
		l.f("Recent refusals:")
		for _, e := range lastN(v.Refusals, 5) {
			l.f("  %s ago  %s: %s", e.Age, e.Regarding, e.Message)
		}
	}
	return l.err
}

func pausedNote(paused bool) string {
	if paused {
		return "; paused"
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("(+%d)", len(s)-n))
}

func lastN[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
