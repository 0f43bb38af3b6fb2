// Command bench measures Lifeline side by side with native Kubernetes and
// OpenKruise v1.9.0 on one local cluster, in one run, one implementation
// at a time: rollouts (scale-up, rolling update, scale-down) of a
// Deployment, a StatefulSet and CloneSets under an instant and a realistic
// kubelet profile, evictions under a PodDisruptionBudget and a
// PodUnavailableBudget, pod creation under a PersistentPodState, the
// manager's memory as pods grow, and reads through the conversion webhook.
// Every controller gets the same client QPS. It prints tables and the
// targets of issue 24 beside their figures, and writes a JSON report and
// SVG charts; it is a benchmark, not a test, and asserts nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	o := options{}
	flag.StringVar(&o.scenarios, "scenarios", "all", "the scenarios to run, comma-separated names or patterns (path.Match: realistic-*, *cloneset*); -list shows them")
	list := flag.Bool("list", false, "list the scenarios and exit")
	flag.IntVar(&o.pods, "pods", 1000, "pods to scale up to and update")
	flag.IntVar(&o.down, "down-to", 100, "pods to scale down to")
	flag.IntVar(&o.qps, "qps", 50, "client QPS of kube-controller-manager, lifeline-manager and kruise-manager")
	flag.IntVar(&o.nodes, "nodes", 10, "simulated nodes")
	flag.IntVar(&o.daemonNodes, "daemon-nodes", 200, "simulated nodes each DaemonSet scenario registers and runs a pod on")
	flag.BoolVar(&o.verbose, "v", false, "print each control-plane process's CPU and the controller's requests by verb, resource and code per step")
	flag.IntVar(&o.budgetPods, "budget-pods", 10000, "pods a budget covers in the evictions scenarios")
	flag.IntVar(&o.evictions, "budget-evictions", 2000, "pods evicted in each evictions run")
	flag.IntVar(&o.inFlight, "budget-in-flight", 50, "evictions (and creations) in flight at once")
	flag.IntVar(&o.ppsRecords, "pps-records", 1000, "records of the PersistentPodState in the pps scenarios, and pods created")
	flag.IntVar(&o.unmanagedPods, "unmanaged-pods", 20000, "pods of Deployments the unmanaged-memory scenario creates beside the manager")
	memory := flag.String("memory-pods", "1000,5000,10000,20000", "pod counts the memory scenario scales one CloneSet through, comma-separated")
	flag.IntVar(&o.conversionReads, "conversion-reads", 1000, "reads of a CloneSet in each version in the conversion scenario")
	flag.IntVar(&o.realNodes, "real-nodes", 2, "real nodes (kubelet and containerd) for the real-nodes scenario; 0 skips it")
	flag.IntVar(&o.realPods, "real-pods", 30, "pods the real-nodes scenario rolls out")
	managerArgs := flag.String("manager-args", "", "extra flags for lifeline-manager, space-separated (an experiment: --cloneset-create-pods-normal leaves the binds unpatched)")
	flag.StringVar(&o.apiProfiles, "apiserver-profiles", "", "a folder: serve kube-apiserver's /debug/pprof and write a 15 s CPU profile of it from the start of each step there (<suite>-<n>.pprof)")
	flag.IntVar(&o.repeat, "repeat", 1, "run the picked scenarios this many times, each on a fresh cluster, and decide each ratio target on the runs' median (figures of a few milliseconds move with the machine's load from run to run)")
	flag.StringVar(&o.out, "out", "bench/results", "where the JSON report and SVG charts go, under the repository (empty: nowhere)")
	flag.Parse()
	o.managerArgs = strings.Fields(*managerArgs)
	o.memoryPods = sizes(*memory)
	if *list {
		for _, s := range allScenarios() {
			fmt.Printf("%-40s %s\n", s.name, s.about)
		}
		return
	}
	// envtest logs through controller-runtime's logger, which otherwise
	// prints a stack trace after 30 s saying none was set; the bench's
	// errors come back as errors.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	picked, err := pick(allScenarios(), o.scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := repeatRuns(ctx, o, picked); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	scenarios                       string
	pods, down, qps, nodes          int
	daemonNodes                     int
	verbose                         bool
	budgetPods, evictions, inFlight int
	ppsRecords, conversionReads     int
	memoryPods                      []int
	unmanagedPods                   int
	out                             string
	realNodes, realPods             int
	managerArgs                     []string
	apiProfiles                     string
	repeat                          int
}

// pick keeps the scenarios whose name matches one of the comma-separated
// patterns ("all" matches all); a pattern that matches none is an error,
// so a typo does not run an empty benchmark.
func pick(all []scenario, patterns string) ([]scenario, error) {
	if patterns == "all" {
		return all, nil
	}
	keep := map[string]bool{}
	for _, p := range strings.Split(patterns, ",") {
		p = strings.TrimSpace(p)
		matched := false
		for _, s := range all {
			if ok, err := path.Match(p, s.name); err != nil {
				return nil, fmt.Errorf("scenario pattern %q: %w", p, err)
			} else if ok {
				keep[s.name], matched = true, true
			}
		}
		if !matched {
			return nil, fmt.Errorf("no scenario matches %q (-list shows them)", p)
		}
	}
	var out []scenario
	for _, s := range all {
		if keep[s.name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// sizes reads a comma-separated list of pod counts; what does not parse is
// left out.
func sizes(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func run(ctx context.Context, o options, picked []scenario, n int) (*report, error) {
	b, err := startBench(ctx, o)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	b.report.Run = n
	return &b.report, runOn(ctx, b, o, picked)
}

func runOn(ctx context.Context, b *bench, o options, picked []scenario) error {
	started := time.Now()
	for _, ph := range phases {
		var here []scenario
		for _, s := range picked {
			if s.phase == ph {
				here = append(here, s)
			}
		}
		if len(here) == 0 {
			continue
		}
		if err := b.enter(ctx, ph); err != nil {
			return b.finish(o, started, fmt.Errorf("setting up %s: %w", ph, err))
		}
		for _, s := range here {
			fmt.Printf("== %s (%s)\n", s.name, s.about)
			err := s.run(ctx, b)
			var l *lingering
			if errors.As(err, &l) && ctx.Err() == nil {
				note := fmt.Sprintf("%s: %v; the scenarios after it ran beside its deletion", s.name, err)
				fmt.Println("NOTE:", note)
				b.report.Notes = append(b.report.Notes, note)
				continue
			}
			if err != nil {
				return b.finish(o, started, fmt.Errorf("%s: %w", s.name, err))
			}
		}
	}
	return b.finish(o, started, nil)
}

// finish prints and writes what was measured, also when a scenario failed
// (the report then says which and why), and returns failed.
func (b *bench) finish(o options, started time.Time, failed error) error {
	b.report.Took = time.Since(started).Round(time.Second).String()
	if failed != nil {
		b.report.Failed = failed.Error()
	}
	printReport(&b.report)
	if err := b.write(o.out); err != nil {
		return errors.Join(failed, err)
	}
	return failed
}
