package main

import (
	"fmt"
	"math"
)

// targets are issue 24's targets, each beside the figure that decides it.
// One that needs a scenario that did not run says so.
func targets(r *report) []target {
	var out []target
	ratio := func(name string, a, b float64, limit float64, atMost bool, unit string) {
		if a == 0 || b == 0 {
			out = append(out, target{Name: name, NotMeasured: true})
			return
		}
		x := a / b
		out = append(out, target{Name: name, Figure: fmt.Sprintf("%.2f× (%.1f vs %.1f %s)", x, a, b, unit), Met: meetsRatio(x, limit, atMost), Ratio: x, Limit: limit, AtMost: atMost})
	}
	pair := func(suite, other, step string) (*rollout, *rollout) { return r.find(suite, step), r.find(other, step) }
	val := func(x *rollout, f func(*rollout) float64) float64 {
		if x == nil {
			return 0
		}
		return f(x)
	}
	wall := func(x *rollout) float64 { return x.WallSeconds }
	writes := func(x *rollout) float64 { return x.PodWritesPerPod }

	for _, step := range []string{stepUp, stepUpdate} {
		c, n := pair("cloneset", "nowebhook-cloneset", step)
		ratio("binds with the webhook ≤ 1.2× without, p50, "+step, val(c, func(x *rollout) float64 { return x.Binds.P50Ms }), val(n, func(x *rollout) float64 { return x.Binds.P50Ms }), 1.2, true, "ms")
		ratio("binds with the webhook ≤ 1.2× without, p99, "+step, val(c, func(x *rollout) float64 { return x.Binds.P99Ms }), val(n, func(x *rollout) float64 { return x.Binds.P99Ms }), 1.2, true, "ms")
	}
	for _, step := range []string{stepUp, stepUpdate, stepDown} {
		c, d := pair("cloneset", "deployment", step)
		ratio("CloneSet controller requests ≤ 1.05× the Deployment's, "+step, val(c, func(x *rollout) float64 { return float64(x.Requests) }), val(d, func(x *rollout) float64 { return float64(x.Requests) }), 1.05, true, "requests")
	}
	for _, p := range [][2]string{{"cloneset-gate", "cloneset"}, {"cloneset-inplace-gate", "cloneset-inplace"}} {
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			g, n := pair(p[0], p[1], step)
			ratio(fmt.Sprintf("%s ≤ 1.05× the time of %s, %s", p[0], p[1], step), val(g, wall), val(n, wall), 1.05, true, "s")
		}
	}
	out = append(out, memoryTargets(r.Memory)...)
	re, ip := pair("realistic-cloneset", "realistic-cloneset-inplace", stepUpdate)
	ratio("realistic kubelets: in-place rollout ≥ 2× faster than ReCreate", val(re, wall), val(ip, wall), 2, false, "s")
	re, ip = pair("realistic-cloneset-narrow", "realistic-cloneset-inplace-narrow", stepUpdate)
	ratio(fmt.Sprintf("realistic kubelets, %d at a time: in-place rollout ≥ 2× faster than ReCreate", narrowWindow), val(re, wall), val(ip, wall), 2, false, "s")
	pub, pdb := findEvictions(r, "Lifeline", "PodUnavailableBudget"), findEvictions(r, "Lifeline", "PodDisruptionBudget")
	if pub != nil && pdb != nil {
		ratio("budget eviction ≤ 1.0× PodDisruptionBudget eviction, p50", pub.ClientP50Ms, pdb.ClientP50Ms, 1.0, true, "ms")
		ratio("budget eviction ≤ 1.0× PodDisruptionBudget eviction, p99", pub.ClientP99Ms, pdb.ClientP99Ms, 1.0, true, "ms")
	} else {
		out = append(out, target{Name: "budget eviction ≤ 1.0× PodDisruptionBudget eviction", NotMeasured: true})
	}
	for _, p := range [][3]string{
		{"cloneset", "openkruise-cloneset", "deployment"},
		{"cloneset-inplace", "openkruise-cloneset-inplace", "deployment"},
		{"realistic-cloneset", "realistic-openkruise-cloneset", "realistic-deployment"},
		{"realistic-cloneset-inplace", "realistic-openkruise-cloneset-inplace", "realistic-deployment"},
	} {
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			c, k := pair(p[0], p[1], step)
			d := r.find(p[2], step)
			ratio(fmt.Sprintf("%s ≤ OpenKruise's time, %s", p[0], step), val(c, wall), val(k, wall), 1, true, "s")
			ratio(fmt.Sprintf("%s ≤ OpenKruise's pod writes, %s", p[0], step), val(c, writes), val(k, writes), 1, true, "writes/pod")
			ratio(fmt.Sprintf("%s ≤ the Deployment's time, %s", p[0], step), val(c, wall), val(d, wall), 1, true, "s")
			ratio(fmt.Sprintf("%s ≤ the Deployment's pod writes, %s", p[0], step), val(c, writes), val(d, writes), 1, true, "writes/pod")
		}
	}
	// Issue 25: an Advanced StatefulSet at or below a native one's time,
	// pod writes and controller requests where the work is the same
	// (Parallel with maxUnavailable 20%, OrderedReady one pod at a time).
	requests := func(x *rollout) float64 { return float64(x.Requests) }
	for _, p := range [][2]string{{"advanced-statefulset", "statefulset"}, {"advanced-statefulset-ordered", "statefulset-ordered"}} {
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			a, n := pair(p[0], p[1], step)
			ratio(fmt.Sprintf("%s ≤ the StatefulSet's time, %s", p[0], step), val(a, wall), val(n, wall), 1, true, "s")
			ratio(fmt.Sprintf("%s ≤ the StatefulSet's pod writes, %s", p[0], step), val(a, writes), val(n, writes), 1, true, "writes/pod")
			ratio(fmt.Sprintf("%s ≤ the StatefulSet's controller requests, %s", p[0], step), val(a, requests), val(n, requests), 1, true, "requests")
		}
	}
	// Issue 26: an Advanced DaemonSet at or below a native one's time,
	// pod writes and controller requests on the same nodes (maxUnavailable
	// 10%, ReCreate).
	for _, step := range []string{stepUp, stepUpdate, stepDown} {
		a, n := pair("advanced-daemonset", "daemonset", step)
		ratio(fmt.Sprintf("advanced-daemonset ≤ the DaemonSet's time, %s", step), val(a, wall), val(n, wall), 1, true, "s")
		ratio(fmt.Sprintf("advanced-daemonset ≤ the DaemonSet's pod writes, %s", step), val(a, writes), val(n, writes), 1, true, "writes/pod")
		ratio(fmt.Sprintf("advanced-daemonset ≤ the DaemonSet's controller requests, %s", step), val(a, requests), val(n, requests), 1, true, "requests")
	}
	out = append(out, nativeCostTargets(r)...)
	return append(out, unmanagedTargets(r)...)
}

// nativeCostTargets are issue 43's: Events, writes per pod (Events
// included), pod creates and binds at the native controllers' level.
func nativeCostTargets(r *report) []target {
	var out []target
	twins := [][2]string{{"cloneset", "deployment"}, {"cloneset-inplace", "deployment"}, {"advanced-statefulset", "statefulset"},
		{"advanced-statefulset-ordered", "statefulset-ordered"}, {"advanced-daemonset", "daemonset"},
		{"many-cloneset", "many-deployment"}, {"many-cloneset-inplace", "many-deployment"}}
	for _, p := range twins {
		// Events are judged over the suite's three steps, as the issue
		// words it. Each step's writes include its Events since 11-30: a
		// step ends once its controllers' Events stop coming
		// (eventsSettled); before, a recorder's queue carried many of a
		// scale-up's into the rollout's window (11-28, 50 Deployments of
		// 20: 247 Events in the scale-up's window, 1,047 in the rollout's).
		var a, n int
		measured := true
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			x, y := r.find(p[0], step), r.find(p[1], step)
			if x == nil || y == nil {
				measured = false
				continue
			}
			a, n = a+x.Events, n+y.Events
			out = append(out, ratioTarget(fmt.Sprintf("%s writes/pod, Events included, ≤ 1.1× %s's, %s", p[0], p[1], step), x.WritesPerPod, y.WritesPerPod, 1.1, "writes/pod"))
		}
		name := fmt.Sprintf("%s Events ≤ 1.5× %s's + 10, scale-up, rollout and scale-down together", p[0], p[1])
		if !measured {
			out = append(out, target{Name: name, NotMeasured: true})
			continue
		}
		limit := 1.5*float64(n) + 10
		out = append(out, target{Name: name, Figure: fmt.Sprintf("%d vs %d (limit %.0f)", a, n, limit), Met: float64(a) <= limit})
	}
	c, d := r.find("cloneset", stepUp), r.find("deployment", stepUp)
	if c != nil && d != nil {
		out = append(out, ratioTarget("API-server pod create p50 ≤ 1.2× the Deployment's, scale-up", c.PodCreateP50Ms, d.PodCreateP50Ms, 1.2, "ms"))
	}
	for _, step := range []string{stepUp, stepUpdate} {
		c, d := r.find("cloneset", step), r.find("deployment", step)
		if c == nil || d == nil {
			continue
		}
		out = append(out, ratioTarget("CloneSet binds ≤ 1.2× the Deployment's, p50, "+step, c.Binds.P50Ms, d.Binds.P50Ms, 1.2, "ms"),
			ratioTarget("CloneSet binds ≤ 1.2× the Deployment's, p99, "+step, c.Binds.P99Ms, d.Binds.P99Ms, 1.2, "ms"))
	}
	return out
}

// ratioTarget: a at most limit times b, decided on the ratio as printed.
func ratioTarget(name string, a, b, limit float64, unit string) target {
	if a == 0 || b == 0 {
		return target{Name: name, NotMeasured: true}
	}
	x := a / b
	return target{Name: name, Figure: fmt.Sprintf("%.2f× (%.2f vs %.2f %s)", x, a, b, unit), Met: meetsRatio(x, limit, true),
		Ratio: x, Limit: limit, AtMost: true}
}

// meetsRatio decides a ratio target on the ratio as printed, to two
// places: 2.999 writes per pod against 3.000 is not a miss.
func meetsRatio(x, limit float64, atMost bool) bool {
	rounded := math.Round(x*100) / 100
	if atMost {
		return rounded <= limit
	}
	return rounded >= limit
}

// memoryTargets: peak RSS under 300 MiB at 10,000 pods, and heap per pod
// at the largest size no more than 10% over that at the second smallest
// (growth at most linear).
func memoryTargets(rows []memoryRow) []target {
	at := func(pods int) *memoryRow {
		for i := range rows {
			if rows[i].Pods == pods {
				return &rows[i]
			}
		}
		return nil
	}
	var out []target
	if m := at(10000); m != nil {
		out = append(out, target{Name: "manager peak RSS at 10,000 pods < 300 MiB", Figure: fmt.Sprintf("%.0f MiB", m.RSS), Met: m.RSS < 300})
	} else {
		out = append(out, target{Name: "manager peak RSS at 10,000 pods < 300 MiB", NotMeasured: true})
	}
	if len(rows) >= 4 {
		small, large := rows[2], rows[len(rows)-1]
		// Live heap, measured right after a collection, when the run has
		// it: heap in use includes however much garbage the last
		// collection left to come.
		kind, s, l := "live heap", small.LivePerPodKiB, large.LivePerPodKiB
		if s == 0 || l == 0 {
			kind, s, l = "heap", small.HeapPerPodKiB, large.HeapPerPodKiB
		}
		out = append(out, target{Name: fmt.Sprintf("memory linear in pods (%s per pod at %d ≤ 1.1× at %d)", kind, large.Pods, small.Pods),
			Figure: fmt.Sprintf("%.1f vs %.1f KiB", l, s), Met: l <= 1.1*s})
	} else {
		out = append(out, target{Name: "memory linear in pods", NotMeasured: true})
	}
	return out
}

func findEvictions(r *report, implementation, run string) *evictions {
	for i := range r.Evictions {
		if r.Evictions[i].Implementation == implementation && r.Evictions[i].Run == run {
			return &r.Evictions[i]
		}
	}
	return nil
}
