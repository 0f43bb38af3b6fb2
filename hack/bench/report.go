package main

import (
	"fmt"
	"os"
	"runtime"
	"text/tabwriter"
	"time"
)

// report is everything one run measured, as bench/results/<date>.json
// holds it.
type report struct {
	Date       string         `json:"date"`
	Machine    machine        `json:"machine"`
	Parameters map[string]any `json:"parameters"`
	Took       string         `json:"took"`
	// Run is this report's number among -repeat's runs (0: one run).
	Run    int    `json:"run,omitempty"`
	Failed string `json:"failed,omitempty"`
	// Notes say what happened beside the measurements (a namespace slow
	// to go, which the next scenarios ran beside).
	Notes      []string         `json:"notes,omitempty"`
	Rollouts   []rollout        `json:"rollouts"`
	Evictions  []evictions      `json:"evictions"`
	Placements []placements     `json:"placements"`
	Memory     []memoryRow      `json:"memory"`
	Unmanaged  []unmanagedRow   `json:"unmanaged,omitempty"`
	Admission  []admissionRow   `json:"admission,omitempty"`
	Conversion []conversionRead `json:"conversion"`
	RealNodes  []realNodeRow    `json:"real_nodes,omitempty"`
	Targets    []target         `json:"targets"`
}

type machine struct {
	CPUs int    `json:"cpus"`
	OS   string `json:"os"`
	Go   string `json:"go"`
}

func newReport(o options) report {
	return report{Date: time.Now().UTC().Format("2006-01-02"), Machine: machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version()},
		Parameters: map[string]any{"pods": o.pods, "down_to": o.down, "qps": o.qps, "nodes": o.nodes, "scenarios": o.scenarios,
			"budget_pods": o.budgetPods, "evictions": o.evictions, "in_flight": o.inFlight, "pps_records": o.ppsRecords,
			"memory_pods": o.memoryPods, "conversion_reads": o.conversionReads, "max_unavailable": "20%", "narrow": fmt.Sprintf("%d pods, maxUnavailable %d", narrowPods, narrowWindow), "kubernetes": "1.36.3", "openkruise": "v1.9.0",
			"real_nodes": o.realNodes, "real_pods": o.realPods}}
}

// find is a suite's step, nil if it did not run.
func (r *report) find(suite, step string) *rollout {
	for i := range r.Rollouts {
		if r.Rollouts[i].Suite == suite && r.Rollouts[i].Step == step {
			return &r.Rollouts[i]
		}
	}
	return nil
}

func printReport(r *report) {
	r.Targets = targets(r)
	fmt.Printf("\nLifeline benchmark, %s (%d CPUs, %s; took %s)\n", r.Date, r.Machine.CPUs, r.Machine.OS, r.Took)
	if r.Failed != "" {
		fmt.Printf("STOPPED EARLY: %s (what ran before is below)\n", r.Failed)
	}
	for _, n := range r.Notes {
		fmt.Println("NOTE:", n)
	}
	for _, g := range groups {
		for _, step := range []string{stepUp, stepUpdate, stepDown} {
			printRollouts(r, g.name, g.anchor, g.about, step)
		}
	}
	printEvictions(r)
	printPlacements(r)
	printMemory(r)
	printUnmanaged(r)
	printAdmission(r)
	printConversion(r)
	printRealNodes(r)
	fmt.Println("\nTargets (issues 24, 25, 26 and 43):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	unmeasured := 0
	for _, t := range r.Targets {
		if t.NotMeasured {
			unmeasured++
			continue
		}
		verdict := "NOT MET"
		if t.Met {
			verdict = "met"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Name, t.Figure, verdict)
	}
	tw.Flush()
	if unmeasured > 0 {
		fmt.Printf("  (%d more need scenarios that did not run)\n", unmeasured)
	}
	fmt.Println("  (Requests leave out Events, counted beside them, by each controller's own user; writes/pod include them.")
	fmt.Println("  Webhook calls are the API server's, every webhook's. kube-controller-manager's CPU and RSS include all")
	fmt.Println("  its controllers, the Lifeline and OpenKruise managers' include their webhooks. kwok, the simulated kubelets,")
	fmt.Println("  is not in the control plane.)")
}

func printRollouts(r *report, group, anchorSuite, about, step string) {
	var rows []rollout
	for _, x := range r.Rollouts {
		if x.Group == group && x.Step == step {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 {
		return
	}
	anchor := r.find(anchorSuite, step)
	fmt.Printf("\n%s %s, %s (ratio: wall time / the Deployment's):\n", step, rows[0].StepDetail, about)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\twall s\tratio\tcontroller requests\t+ events\twrites/pod, events incl.\twebhook calls\tpod writes/pod\tpod create p50 ms\tpod write p50 ms\tp99 ms\tbind p50 ms\tp99 ms\tbind mean at API server ms\tof it in webhook ms\tpod webhook p50 ms\tp99 ms\tbind cache misses created/left/waited/live\tcontrol plane CPU s\tcontroller CPU s\tcontroller peak RSS MiB\t")
	for _, x := range rows {
		ratio := "—"
		if anchor != nil {
			ratio = fmt.Sprintf("%.2f×", x.WallSeconds/anchor.WallSeconds)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%d\t%d\t%.2f\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%d/%d/%d/%d\t%.1f\t%.1f\t%.0f\t\n", x.Label, x.WallSeconds, ratio, x.Requests, x.Events,
			x.WritesPerPod, x.WebhookCalls, x.PodWritesPerPod, x.PodCreateP50Ms, x.PodWriteP50Ms, x.PodWriteP99Ms, x.Binds.P50Ms, x.Binds.P99Ms, x.Binds.APIMeanMs, x.Binds.WebhookMeanMs, x.WebhookP50Ms, x.WebhookP99Ms, x.WebhookCreated, x.WebhookNotCreated, x.WebhookWaits, x.WebhookLiveReads,
			x.PlaneCPU, x.CtrlCPU, x.CtrlPeakRSS)
	}
	tw.Flush()
}

func printEvictions(r *report) {
	if len(r.Evictions) == 0 {
		return
	}
	fmt.Printf("\nEvictions, %d in flight, from %d pods:\n", r.Parameters["in_flight"], r.Evictions[0].Covered)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tevictions\tadmitted\trefused\t409s retried\tclient p50 ms\tclient p99 ms\tadmission p50 ms\tp99 ms\tstatus writes\tper write\twrite p50 ms\tp99 ms\tadmitted/s\tmanager CPU s\tpeak RSS MiB\t")
	for _, f := range r.Evictions {
		fmt.Fprintf(tw, "%s, %s\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.0f\t\n", f.Implementation, f.Run, f.Evictions, f.Admitted, f.Refused, f.Conflicts,
			f.ClientP50Ms, f.ClientP99Ms, f.WebhookP50Ms, f.WebhookP99Ms, f.Writes, f.Batch, f.WriteP50Ms, f.WriteP99Ms, f.PerSec, f.CtrlCPU, f.CtrlPeakRSS)
	}
	tw.Flush()
	fmt.Println("  (client latency is the whole eviction at the API server, webhooks and the budget's status write included;")
	fmt.Println("  Lifeline's admission figures are measured in its manager, interpolated from its histograms)")
}

func printPlacements(r *report) {
	if len(r.Placements) == 0 {
		return
	}
	fmt.Println("\nPod creation under a PersistentPodState:")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tpods\tclient p50 ms\tclient p99 ms\tinjector p50 ms\tinjector p99 ms\t")
	for _, p := range r.Placements {
		fmt.Fprintf(tw, "%s, %s\t%d\t%.1f\t%.1f\t%.3f\t%.3f\t\n", p.Implementation, p.Run, p.Pods, p.ClientP50Ms, p.ClientP99Ms, p.InjectorP50Ms, p.InjectorP99Ms)
	}
	tw.Flush()
}

func printMemory(r *report) {
	if len(r.Memory) == 0 {
		return
	}
	fmt.Println("\nLifeline manager memory by pods cached (one CloneSet):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tpeak RSS MiB\theap in use MiB\tlive heap MiB\tlive heap per pod KiB\tsettled in s\t")
	for _, m := range r.Memory {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t\n", m.Pods, m.RSS, m.Heap, m.Live, m.LivePerPodKiB, m.SettledSeconds)
	}
	tw.Flush()
}

func printConversion(r *report) {
	if len(r.Conversion) == 0 {
		return
	}
	fmt.Println("\nReads of CloneSets stored as v1beta1 (a v1alpha1 read converts through the manager's webhook):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tcount\tp50 ms\tp99 ms\t")
	for _, c := range r.Conversion {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t\n", c.Read, c.Count, c.P50Ms, c.P99Ms)
	}
	tw.Flush()
}

// target is one of issue 24's targets beside its figure.
type target struct {
	Name        string `json:"name"`
	Figure      string `json:"figure"`
	Met         bool   `json:"met"`
	NotMeasured bool   `json:"not_measured,omitempty"`
	// Ratio, Limit and AtMost: a target on a ratio (-repeat decides it on
	// the runs' median).
	Ratio  float64 `json:"ratio,omitempty"`
	Limit  float64 `json:"limit,omitempty"`
	AtMost bool    `json:"at_most,omitempty"`
}
