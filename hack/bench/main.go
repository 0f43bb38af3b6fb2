// Command bench compares CloneSet with Deployment on one local cluster, in
// one run: scale-up from 0, a rolling update at maxUnavailable 20%, and a
// scale-down to 100. It then times pod creations with and without a
// PersistentPodState record, and pod deletions with and without a
// PodUnavailableBudget covering 10,000 pods. Both controllers get the same client QPS. It prints a
// table of figures; it is a benchmark, not a test, and asserts nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

func main() {
	pods := flag.Int("pods", 1000, "pods to scale up to and update")
	down := flag.Int("down-to", 100, "pods to scale down to")
	qps := flag.Int("qps", 50, "client QPS of both kube-controller-manager and lifeline-manager")
	nodes := flag.Int("nodes", 10, "simulated nodes")
	verbose := flag.Bool("v", false, "print each control-plane process's CPU per scenario")
	only := flag.String("kinds", strings.Join(kinds, ","), "the workloads to run, comma-separated")
	budgetPods := flag.Int("budget-pods", 10000, "pods a PodUnavailableBudget covers in the deletion run (0: no deletion run)")
	budgetDeletions := flag.Int("budget-deletions", 2000, "pods deleted in the deletion run, with and without the budget")
	budgetInFlight := flag.Int("budget-in-flight", 50, "deletions in flight at once")
	ppsRecords := flag.Int("pps-records", 1000, "records of the PersistentPodState in the pod-creation run, and pods created (0: no run)")
	memoryPods := flag.String("memory-pods", "", "pod counts to scale one CloneSet through, reading the manager's memory at each, comma-separated (empty: no run; e.g. 1000,5000,10000,20000)")
	conversionReads := flag.Int("conversion-reads", 1000, "reads of a CloneSet in each version in the conversion run (0: no run)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	budget := budgetRun{covered: *budgetPods, deletions: *budgetDeletions, inFlight: *budgetInFlight, ppsRecords: *ppsRecords, conversionReads: *conversionReads, memoryPods: sizes(*memoryPods)}
	if err := run(ctx, *pods, *down, *qps, *nodes, strings.Split(*only, ","), *verbose, budget); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// kinds are the workloads compared, in the order they run. The last two
// run with the pod binding webhook taken out of the cluster, to show what
// it costs every bind and what it saves the CloneSet.
var kinds = []string{"Deployment", "CloneSet", "CloneSet (in-place)", "CloneSet (" + gateDeclared + ")", "CloneSet (in-place + " + gateDeclared + ")",
	noWebhook + "Deployment", noWebhook + "CloneSet"}

// noWebhook prefixes a kind that runs without the pod binding webhook.
const noWebhook = "no binding webhook: "

// controllerUsers are the API users whose requests count as each
// controller's: kube-controller-manager runs each controller under its own
// service account.
var controllerUsers = map[string][]string{
	"Deployment":                      {"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller"},
	"CloneSet":                        {"lifeline-manager"},
	"CloneSet (in-place)":             {"lifeline-manager"},
	"CloneSet (" + gateDeclared + ")": {"lifeline-manager"},
	"CloneSet (in-place + " + gateDeclared + ")": {"lifeline-manager"},
	noWebhook + "Deployment":                     {"system:serviceaccount:kube-system:deployment-controller", "system:serviceaccount:kube-system:replicaset-controller"},
	noWebhook + "CloneSet":                       {"lifeline-manager"},
}

type result struct {
	scenario, kind  string
	pods            int
	wall            time.Duration
	requests        int
	events          int
	podWritesPerPod float64
	planeCPU        float64
	kwokCPU         float64
	ctrlCPU         float64
	ctrlPeakRSS     int64
	binds           bindFigures
}

// budgetRun sizes the PodUnavailableBudget deletion run.
type budgetRun struct {
	covered, deletions, inFlight, ppsRecords, conversionReads int
	memoryPods                                                []int
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

func run(ctx context.Context, pods, down, qps, nodes int, only []string, verbose bool, budget budgetRun) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "lifeline-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	audit := filepath.Join(dir, "audit.log")
	fmt.Printf("starting a local cluster (%d nodes, controller QPS %d)\n", nodes, qps)
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: nodes, ControllerQPS: qps, AuditLog: audit, Progress: os.Stdout})
	if err != nil {
		return err
	}
	defer c.Stop()
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}}); err != nil {
		return err
	}
	pprofPort, err := cluster.FreePorts(1)
	if err != nil {
		return err
	}
	pprof := fmt.Sprintf("127.0.0.1:%d", pprofPort[0])
	l, err := c.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: dir, QPS: qps, Args: []string{"--pprof-bind-address=" + pprof}})
	if l != nil {
		scraper = l.Scraper
	}
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 500, 1000 // the benchmark's own reads must not be the bottleneck
	k8s, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: manager.Scheme()})
	if err != nil {
		return err
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	b := &bench{c: c, k8s: k8s, client: client, audit: audit, pods: pods, down: down, verbose: verbose, pprof: pprof}

	var results []result
	for i, kind := range kinds {
		if !slices.Contains(only, kind) {
			continue
		}
		ctrl := "kube-controller-manager"
		if !strings.HasSuffix(kind, "Deployment") {
			ctrl = l.Name
		}
		if strings.HasPrefix(kind, noWebhook) && !b.webhookRemoved {
			if err := removeBindingWebhook(ctx, k8s); err != nil {
				return err
			}
			b.webhookRemoved = true
		}
		ns := fmt.Sprintf("bench-%d", i)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := cluster.WaitForServiceAccount(ctx, client, ns); err != nil {
			return err
		}
		w := workload{kind: strings.TrimPrefix(kind, noWebhook), ns: ns}
		for _, sc := range []struct {
			name   string
			change func(context.Context) error
			done   func(context.Context) (bool, error)
			pods   int
		}{
			{fmt.Sprintf("scale-up 0→%d", pods), func(ctx context.Context) error { return w.create(ctx, k8s, int32(pods)) },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(pods)) }, pods},
			{fmt.Sprintf("rolling update of %d, maxUnavailable 20%%", pods), func(ctx context.Context) error { return w.setImage(ctx, k8s, "nginx:1.28") },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(pods)) }, pods},
			{fmt.Sprintf("scale-down %d→%d", pods, down), func(ctx context.Context) error { return w.scale(ctx, k8s, int32(down)) },
				func(ctx context.Context) (bool, error) { return w.settled(ctx, k8s, b, int32(down)) }, pods - down},
		} {
			fmt.Printf("%s: %s\n", kind, sc.name)
			r, err := b.measure(ctx, kind, ns, ctrl, sc.name, sc.pods, sc.change, sc.done)
			if err != nil {
				return fmt.Errorf("%s %s: %w", kind, sc.name, err)
			}
			results = append(results, r)
		}
	}
	if len(results) > 0 {
		report(results)
	}
	if budget.ppsRecords > 0 {
		if err := b.ppsBench(ctx, l, budget.ppsRecords, budget.inFlight); err != nil {
			return err
		}
	}
	if len(budget.memoryPods) > 0 {
		if err := b.memoryBench(ctx, l, budget.memoryPods); err != nil {
			return err
		}
	}
	if budget.conversionReads > 0 {
		if err := b.conversionBench(ctx, l, 100, budget.conversionReads); err != nil {
			return err
		}
	}
	if budget.covered > 0 {
		return b.budgetBench(ctx, l, budget.covered, budget.deletions, budget.inFlight)
	}
	return nil
}
