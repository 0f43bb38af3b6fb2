package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// phase is the state of the cluster a scenario needs. Phases run in this
// order, each set up once from the one before: Lifeline first (with and
// without its binding webhook, under both profiles), then OpenKruise in
// its place.
type phase string

const (
	lifelineInstant   phase = "Lifeline, instant kubelets"
	lifelineNoWebhook phase = "Lifeline without the pod binding webhook, instant kubelets"
	lifelineRealistic phase = "Lifeline, realistic kubelets"
	kruiseRealistic   phase = "OpenKruise v1.9.0, realistic kubelets"
	kruiseInstant     phase = "OpenKruise v1.9.0, instant kubelets"
)

// Lifeline's webhook configurations (hack/webhookselectors names them).
const (
	mutatingWebhooks   = "lifeline-mutating-webhooks"
	validatingWebhooks = "lifeline-validating-webhooks"
)

var phases = []phase{lifelineInstant, lifelineNoWebhook, lifelineRealistic, kruiseRealistic, kruiseInstant}

type scenario struct {
	name, about string
	phase       phase
	run         func(context.Context, *bench) error
}

// allScenarios are every scenario, in the order they run.
func allScenarios() []scenario {
	var out []scenario
	for _, s := range suites {
		out = append(out, scenario{name: s.name, about: s.label() + ", " + string(s.profile) + " kubelets", phase: s.phase(),
			run: func(ctx context.Context, b *bench) error { return b.runSuite(ctx, s) }})
	}
	out = append(out,
		scenario{"evictions", "evictions under no budget, a PodDisruptionBudget and a PodUnavailableBudget", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.evictionBench(ctx, "Lifeline") }},
		scenario{"pps", "pod creation under a PersistentPodState's records", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.ppsBench(ctx, "Lifeline") }},
		scenario{"conversion", "CloneSet reads in v1beta1 (stored) and v1alpha1 (converted)", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.conversionBench(ctx, 100, b.o.conversionReads) }},
		scenario{"real-nodes", "in place against ReCreate and a Deployment, real containers on real nodes", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.realNodesBench(ctx) }},
		scenario{"memory", "the manager's memory as one CloneSet grows", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.memoryBench(ctx, b.o.memoryPods) }},
		scenario{"unmanaged-memory", "the manager's memory beside 20,000 pods of Deployments it does not manage", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.unmanagedBench(ctx, b.o.unmanagedPods) }},
		scenario{"admission", "what the API server's admission spends on a pod write, with Lifeline's admission and without", lifelineInstant,
			func(ctx context.Context, b *bench) error { return b.admissionBench(ctx) }},
		scenario{"openkruise-evictions", "evictions under OpenKruise's PodUnavailableBudget", kruiseInstant,
			func(ctx context.Context, b *bench) error { return b.evictionBench(ctx, "OpenKruise") }},
		scenario{"openkruise-pps", "pod creation under OpenKruise's PersistentPodState", kruiseInstant,
			func(ctx context.Context, b *bench) error { return b.ppsBench(ctx, "OpenKruise") }},
	)
	slices.SortStableFunc(out, func(a, b scenario) int { return slices.Index(phases, a.phase) - slices.Index(phases, b.phase) })
	return out
}

type bench struct {
	o      options
	c      *cluster.Cluster
	k8s    ctrlclient.Client
	client kubernetes.Interface
	dir    string
	audit  string
	// profiles counts the API server profiles taken.
	profiles int
	l        *cluster.Lifeline
	kruise   *cluster.OpenKruise
	// pprof is the manager's pprof address (host:port).
	pprof string
	// removed is the binding webhook while it is out of the cluster.
	removed *admissionregistrationv1.MutatingWebhook
	report  report
	ns      int
}

func startBench(ctx context.Context, o options) (*bench, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lifeline-bench-")
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, dir: dir, audit: filepath.Join(dir, "audit.log")}
	b.report = newReport(o)
	fmt.Printf("starting a local cluster (%d nodes, controller QPS %d)\n", o.nodes, o.qps)
	// StatefulSets roll out maxUnavailable at a time, as Deployments
	// and CloneSets do (beta in 1.35, off by default).
	b.c, err = cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: o.nodes, ControllerQPS: o.qps, AuditLog: b.audit, APIServerProfiling: o.apiProfiles != "", Progress: os.Stdout,
		FeatureGates: "MaxUnavailableStatefulSet=true", RealNodes: o.realNodes})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if _, err := envtest.InstallCRDs(b.c.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "bases")}}); err != nil {
		b.stop()
		return nil, err
	}
	pprofPort, err := cluster.FreePorts(1)
	if err != nil {
		b.stop()
		return nil, err
	}
	b.pprof = fmt.Sprintf("127.0.0.1:%d", pprofPort[0])
	b.l, err = b.c.StartLifeline(ctx, cluster.LifelineOptions{Root: root, Dir: dir, QPS: o.qps, Args: append([]string{"--pprof-bind-address=" + b.pprof}, o.managerArgs...)})
	if b.l != nil {
		scraper = b.l.Scraper
	}
	if err != nil {
		b.stop()
		return nil, err
	}
	cfg := rest.CopyConfig(b.c.Config)
	cfg.QPS, cfg.Burst = 500, 1000 // the benchmark's own reads must not be the bottleneck
	if b.k8s, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: manager.Scheme()}); err != nil {
		b.stop()
		return nil, err
	}
	b.client = kubernetes.NewForConfigOrDie(cfg)
	return b, nil
}

func (b *bench) stop() {
	b.c.Stop()
	if os.Getenv("LIFELINE_BENCH_KEEP") != "" {
		fmt.Println("kept the cluster's folder (logs, audit log):", b.dir)
		return
	}
	os.RemoveAll(b.dir)
}

// enter sets the cluster up for ph, from the phase before it.
func (b *bench) enter(ctx context.Context, ph phase) error {
	fmt.Printf("=== %s\n", ph)
	if ph != lifelineNoWebhook && b.removed != nil {
		if err := b.restoreBindingWebhook(ctx); err != nil {
			return err
		}
	}
	switch ph {
	case lifelineNoWebhook:
		return b.removeBindingWebhook(ctx)
	case lifelineRealistic:
		return b.c.UseProfile(cluster.Realistic)
	case kruiseRealistic, kruiseInstant:
		if b.kruise == nil {
			if err := b.swapToOpenKruise(ctx); err != nil {
				return err
			}
		}
		profile := cluster.Realistic
		if ph == kruiseInstant {
			profile = cluster.Instant
		}
		if b.profile() != profile {
			return b.c.UseProfile(profile)
		}
	}
	return nil
}

// profile is the kubelets' profile now.
func (b *bench) profile() cluster.Profile { return b.c.Profile() }

// swapToOpenKruise stops Lifeline, takes its webhooks out, and runs
// OpenKruise's manager at the same QPS, with its own CRDs and webhooks.
func (b *bench) swapToOpenKruise(ctx context.Context) error {
	if err := b.c.StopProcess(b.l.Name, syscall.SIGTERM); err != nil {
		return err
	}
	for _, obj := range []ctrlclient.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mutatingWebhooks}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: validatingWebhooks}},
	} {
		if err := b.k8s.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	fmt.Println("starting OpenKruise's manager in Lifeline's place")
	k, err := b.c.StartOpenKruise(ctx, os.Stdout, fmt.Sprintf("--rest-config-qps=%d", b.o.qps), fmt.Sprintf("--rest-config-burst=%d", b.o.qps*3/2))
	if err != nil {
		return err
	}
	b.kruise = k
	return nil
}

// removeBindingWebhook takes the pod binding webhook out of Lifeline's
// mutating webhook configuration, as on a cluster where it is not
// installed; the controller then moves pods to Normal itself.
func (b *bench) removeBindingWebhook(ctx context.Context) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := b.k8s.Get(ctx, ctrlclient.ObjectKey{Name: mutatingWebhooks}, cfg); err != nil {
		return err
	}
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == "mpod.lifeline.dev" })
	if i < 0 {
		return fmt.Errorf("no webhook mpod.lifeline.dev in %s", mutatingWebhooks)
	}
	removed := cfg.Webhooks[i]
	cfg.Webhooks = slices.Delete(cfg.Webhooks, i, i+1)
	if err := b.k8s.Update(ctx, cfg); err != nil {
		return err
	}
	b.removed = &removed
	return nil
}

func (b *bench) restoreBindingWebhook(ctx context.Context) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := b.k8s.Get(ctx, ctrlclient.ObjectKey{Name: mutatingWebhooks}, cfg); err != nil {
		return err
	}
	cfg.Webhooks = append(cfg.Webhooks, *b.removed)
	if err := b.k8s.Update(ctx, cfg); err != nil {
		return err
	}
	b.removed = nil
	return nil
}

// namespace makes a namespace of its own for a scenario.
func (b *bench) namespace(ctx context.Context, prefix string) (string, error) {
	b.ns++
	ns := fmt.Sprintf("%s-%d", prefix, b.ns)
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	return ns, cluster.WaitForServiceAccount(ctx, b.client, ns)
}

// dropNamespace deletes a scenario's namespace and waits until it is gone,
// so that its pods' deletions do not run into the next scenario.
func (b *bench) dropNamespace(ctx context.Context, ns string) error {
	if err := b.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		// Said apart from the measurement: a scenario's figures are taken
		// before its namespace goes (11-29: 20,000 pods measured, then not
		// deleted within 10 minutes, reported as a bare deadline).
		return &lingering{ns: ns, err: err}
	}
	return nil
}

// lingering is a scenario's namespace not gone after its measurement: the
// figures stand, and the run goes on (runOn), the report saying the
// scenarios after it ran beside the deletion.
type lingering struct {
	ns  string
	err error
}

func (l *lingering) Error() string {
	return fmt.Sprintf("namespace %s not gone after the measurement: %v", l.ns, l.err)
}

func (l *lingering) Unwrap() error { return l.err }
