package chaos

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

const (
	preparingNormal = string(pub.LifecycleStatePreparingNormal)
	normal          = string(pub.LifecycleStateNormal)
	preparingUpdate = string(pub.LifecycleStatePreparingUpdate)
	updating        = string(pub.LifecycleStateUpdating)
	updated         = string(pub.LifecycleStateUpdated)
	preparingDelete = string(pub.LifecycleStatePreparingDelete)
)

// transitions are the lifecycle state changes OpenKruise's state machine
// allows (reference cloneset.md §2.3); a pod with no state counts as
// Normal.
var transitions = map[string][]string{
	preparingNormal: {normal, preparingUpdate, updating, preparingDelete},
	normal:          {preparingUpdate, updating, preparingDelete},
	preparingUpdate: {updating, updated, normal, preparingDelete},
	updating:        {updated, normal, preparingDelete},
	updated:         {normal, preparingUpdate, preparingDelete},
	preparingDelete: {preparingNormal},
}

func stateOf(r PodRev) string {
	if s := r.State(); s != "" {
		return s
	}
	return normal
}

// checkHooks follows each pod's writes: no state skipped, nothing a hook
// holds done while it holds it.
func checkHooks(h *History) []Violation {
	var out []Violation
	pods, order := byPod(h)
	for _, uid := range order {
		revs := pods[uid]
		w, ok := h.workload(revs[0].Workload)
		if !ok {
			continue
		}
		if w.PreNormal && revs[0].State() != preparingNormal {
			out = append(out, violation(revs[0], "skipped state", "created %s, not PreparingNormal, under a preNormal hook", revs[0].State()))
		}
		for i := 1; i < len(revs); i++ {
			out = append(out, hookStep(w, revs[i-1], revs[i])...)
		}
	}
	return out
}

func hookStep(w Workload, prev, cur PodRev) []Violation {
	var out []Violation
	from, to := stateOf(prev), stateOf(cur)
	if from != to && !cur.Gone && !slices.Contains(transitions[from], to) {
		out = append(out, violation(cur, "skipped state", "%s → %s", from, to))
	}
	heldBefore := w.held(prev.Labels)
	switch {
	case w.PreDelete && heldBefore && !prev.Deleting && !prev.Gone && (cur.Deleting || cur.Gone):
		out = append(out, violation(cur, "held pod disrupted", "deleted while its preDelete hook held it (%s)", from))
	case w.InPlaceUpdate && heldBefore && prev.Spec != cur.Spec:
		out = append(out, violation(cur, "held pod disrupted", "containers changed (%s → %s) while its inPlaceUpdate hook held it", prev.Spec, cur.Spec))
	}
	if w.InPlaceUpdate && heldBefore && to == updating && (from == normal || from == preparingNormal) {
		out = append(out, violation(cur, "skipped state", "%s → Updating without PreparingUpdate while its inPlaceUpdate hook held it", from))
	}
	if w.PreNormal && from == preparingNormal && to == normal && !w.held(cur.Labels) {
		out = append(out, violation(cur, "skipped state", "Normal before its preNormal hook released it"))
	}
	return out
}

func violation(r PodRev, invariant, format string, args ...any) Violation {
	return Violation{At: r.At, Invariant: invariant, Subject: r.Namespace + "/" + r.Name + " (" + short(r.UID) + ")", Detail: fmt.Sprintf(format, args...)}
}

func short(uid string) string { return uid[:min(len(uid), 8)] }

// checkInstanceIDs: two pods of a CloneSet never exist with one instance
// id (it names their claims).
func checkInstanceIDs(h *History) []Violation {
	var out []Violation
	live := map[string]map[string]bool{} // workload/id → UIDs
	reported := map[string]bool{}
	for _, r := range h.Pods {
		w, ok := h.workload(r.Workload)
		if !ok || !w.InstanceIDs || instanceID(r) == "" {
			continue
		}
		key := r.Workload + "/" + instanceID(r)
		if live[key] == nil {
			live[key] = map[string]bool{}
		}
		if r.Gone {
			delete(live[key], r.UID)
			continue
		}
		live[key][r.UID] = true
		if len(live[key]) > 1 && !reported[key+r.UID] {
			reported[key+r.UID] = true
			out = append(out, violation(r, "duplicate instance id", "instance id %s is also held by %d other live pod(s)", instanceID(r), len(live[key])-1))
		}
	}
	return out
}

// checkWindows: within each window, no more pods of the workload are
// unavailable than its limit; the worst moment of a window is reported.
func checkWindows(h *History) []Violation {
	var out []Violation
	for _, win := range h.Windows {
		available := map[string]bool{}
		count := func() int {
			n := 0
			for _, a := range available {
				if a {
					n++
				}
			}
			return n
		}
		worst, worstAt, started := -1, win.From, false
		for _, r := range h.Pods {
			if r.At.After(win.To) {
				break
			}
			if !started && !r.At.Before(win.From) {
				started = true
				worst, worstAt = win.Replicas-count(), win.From
			}
			if r.Workload != win.Workload {
				continue
			}
			available[r.UID] = r.Available()
			if started {
				if u := win.Replicas - count(); u > worst {
					worst, worstAt = u, r.At
				}
			}
		}
		if !started {
			worst = win.Replicas - count()
		}
		if worst > win.Limit {
			out = append(out, Violation{At: worstAt, Invariant: "over-disruption", Subject: win.Workload,
				Detail: fmt.Sprintf("%d of %d pods unavailable, %s allows %d", worst, win.Replicas, win.Why, win.Limit)})
		}
	}
	return out
}

// registrySlack is how far the registry's watch may run ahead of the
// pods' watch: two streams from two etcds.
const registrySlack = time.Second

// checkRegistry: an entry is written only for a pod that has been Ready,
// and at the end the registry holds no pod that is gone.
func checkRegistry(h *History) []Violation {
	var out []Violation
	firstReady := map[string]time.Time{}
	last := map[string]PodRev{}
	for _, r := range h.Pods {
		if _, seen := firstReady[r.UID]; !seen && r.Ready {
			firstReady[r.UID] = r.At
		}
		last[r.UID] = r
	}
	entries := map[string]RegistryWrite{}
	for _, wr := range h.Registry {
		if !wr.Put {
			delete(entries, wr.Key)
			continue
		}
		entries[wr.Key] = wr
		if ready, ok := firstReady[wr.UID]; !ok || ready.After(wr.At.Add(registrySlack)) {
			out = append(out, Violation{At: wr.At, Invariant: "registry", Subject: wr.Key, Detail: "registered a pod (" + short(wr.UID) + ") that was never Ready"})
		}
	}
	for key, wr := range entries {
		if r, ok := last[wr.UID]; !ok || r.Gone {
			out = append(out, Violation{At: h.End, Invariant: "registry", Subject: key, Detail: "entry kept for a deleted pod (" + short(wr.UID) + ")"})
		}
	}
	return out
}

// checkPlacement: a pod whose PersistentPodState requires its zone is
// bound in the zone its record held when it was bound.
func checkPlacement(h *History) []Violation {
	var out []Violation
	records := map[string]map[string]string{} // workload → pod → zone
	bound := map[string]bool{}
	recs := h.Records
	for _, r := range h.Pods {
		for len(recs) > 0 && recs[0].Rev < r.Rev {
			records[recs[0].Workload] = recs[0].Zones
			recs = recs[1:]
		}
		w, ok := h.workload(r.Workload)
		if !ok || !w.RequiredZone || r.Node == "" || bound[r.UID] {
			continue
		}
		bound[r.UID] = true
		if want, ok := records[r.Workload][r.Name]; ok && want != h.NodeZones[r.Node] {
			out = append(out, violation(r, "placement", "bound to %s in %s; its record requires %s", r.Node, h.NodeZones[r.Node], want))
		}
	}
	return out
}

func checkPhases(h *History) []Violation {
	var out []Violation
	for _, p := range h.Phases {
		if !p.Done {
			out = append(out, Violation{At: h.End, Invariant: "unfinished", Subject: p.Name, Detail: fmt.Sprintf("not done after %s: %s", p.Took.Round(time.Second), p.Why)})
		}
	}
	return out
}

// checkStaleWrites: a leader paused past its lease writes nothing once
// resumed (its lease renewals aside) until it exits.
func checkStaleWrites(h *History) []Violation {
	var out []Violation
	for _, p := range h.Pauses {
		until := p.Exited
		if until.IsZero() {
			until = h.End
		}
		for _, w := range h.Writes {
			if !strings.Contains(w.UserAgent, p.Identity) || strings.HasSuffix(w.UserAgent, "/leader-election") || w.Resource == "leases" {
				continue
			}
			if w.At.After(p.Resumed) && !w.At.After(until) {
				out = append(out, Violation{At: w.At, Invariant: "stale leader", Subject: p.Identity,
					Detail: fmt.Sprintf("%s %s %s after it was resumed past its lease", w.Verb, w.Resource, w.Name)})
			}
		}
	}
	return out
}
