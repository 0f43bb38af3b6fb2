package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/internal/bridge"
	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// devEnv is a running make dev, as the demo reaches it.
type devEnv struct {
	k8s  client.WithWatch
	etcd *clientv3.Client
	out  io.Writer
	// dir is make dev's folder; kubeconfig its kubeconfig.
	dir, kubeconfig string
}

func openDev(args []string, name string) (*devEnv, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	devDir := fs.String("dir", "", "make dev's folder (default .dev in the repository)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *devDir == "" {
		root, err := binaries.RepoRoot()
		if err != nil {
			return nil, err
		}
		*devDir = filepath.Join(root, ".dev")
	}
	if _, err := os.Stat(filepath.Join(*devDir, "ready")); err != nil {
		return nil, fmt.Errorf("no make dev running in %s (start it with make dev)", *devDir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(*devDir, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	k8s, err := client.NewWithWatch(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return nil, err
	}
	endpoint, err := os.ReadFile(filepath.Join(*devDir, "registry-endpoint"))
	if err != nil {
		return nil, err
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{strings.TrimSpace(string(endpoint))}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	return &devEnv{k8s: k8s, etcd: etcd, out: os.Stdout, dir: *devDir, kubeconfig: filepath.Join(*devDir, "kubeconfig")}, nil
}

// registry prints the demo pods next to the registry, once.
func registry(ctx context.Context, args []string) error {
	env, err := openDev(args, "registry")
	if err != nil {
		return err
	}
	defer env.etcd.Close()
	return env.show(ctx)
}

// demo is make demo: the seed scenario step by step, the pods' lifecycle
// states and the registry shown after each.
func demo(ctx context.Context, args []string) error {
	env, err := openDev(args, "demo")
	if err != nil {
		return err
	}
	defer env.etcd.Close()
	const lifecycleDemo, preNormalDemo, orderedDemo = "cloneset-lifecycle-demo", "cloneset-prenormal-demo", "statefulset-lifecycle-demo"
	const agentDemo = "daemonset-node-agent-demo"
	steps := []struct {
		title, ref string
		run        func(context.Context) error
	}{
		{"scale-up: seed 002's CloneSet gets one more pod; it is registered before it becomes Normal", "clone/" + preNormalDemo,
			env.cloneSet(preNormalDemo, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To(*c.Spec.Replicas + 1) })},
		{"in-place update: seed 001's pods leave the registry, get the new image, and come back", "clone/" + lifecycleDemo,
			env.cloneSet(lifecycleDemo, func(c *appsv1alpha1.CloneSet) {
				c.Spec.Template.Spec.Containers[0].Image = otherImage(&c.Spec.Template)
			})},
		{"in-place update of an Advanced StatefulSet: seed 001's hooks, the same bridge, ordered pods", "asts/" + orderedDemo,
			env.statefulSet(orderedDemo, func(s *appsv1beta1.StatefulSet) {
				s.Spec.Template.Spec.Containers[0].Image = otherImage(&s.Spec.Template)
			})},
		{"rolling update of an Advanced DaemonSet node agent: node by node, each pod leaves the registry before it goes", "ads/" + agentDemo,
			env.daemonSet(agentDemo, func(s *appsv1beta1.DaemonSet) {
				s.Spec.Template.Spec.Containers[0].Image = otherImage(&s.Spec.Template)
			})},
		{"ReCreate update: seed 002's pods are replaced; each leaves the registry before it goes", "clone/" + preNormalDemo,
			env.cloneSet(preNormalDemo, func(c *appsv1alpha1.CloneSet) {
				c.Spec.Template.Spec.Containers[0].Image = otherImage(&c.Spec.Template)
			})},
		{"scale-down: seed 002's CloneSet loses a pod, unregistered before it is deleted", "clone/" + preNormalDemo,
			env.cloneSet(preNormalDemo, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To(max(*c.Spec.Replicas-1, 1)) })},
	}
	plugin, err := env.buildPlugin(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.out, "== before")
	if err := env.show(ctx); err != nil {
		return err
	}
	for i, s := range steps {
		fmt.Fprintf(env.out, "\n== step %d: %s\n", i+1, s.title)
		fmt.Fprintln(env.out, "-- timeline (seconds since the step began)")
		tl, err := env.follow(ctx)
		if err != nil {
			return err
		}
		err = s.run(ctx)
		tl.end()
		if err != nil {
			return err
		}
		fmt.Fprintf(env.out, "-- kubectl lifeline status %s\n", s.ref)
		if err := env.status(ctx, plugin, s.ref); err != nil {
			return err
		}
		fmt.Fprintln(env.out, pods)
		if err := env.show(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pods heads the table of pods and registry entries after each step.
const pods = "-- pods and registry"

// buildPlugin builds kubectl-lifeline (its own module) into make dev's
// folder, for the status view after each step.
func (e *devEnv) buildPlugin(ctx context.Context) (string, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(e.dir, "bin", "kubectl-lifeline")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(root, "cmd", "kubectl-lifeline")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-lifeline: %v\n%s", err, out)
	}
	return bin, nil
}

// status prints the plugin's status view of ref.
func (e *devEnv) status(ctx context.Context, plugin, ref string) error {
	cmd := exec.CommandContext(ctx, plugin, "--kubeconfig", e.kubeconfig, "-n", "demo", "status", ref)
	cmd.Stdout, cmd.Stderr = e.out, e.out
	return cmd.Run()
}

// cloneSet is a step that changes the demo CloneSet name and waits until
// it runs its spec: every pod updated, Normal and available.
func (e *devEnv) cloneSet(name string, change func(*appsv1alpha1.CloneSet)) func(context.Context) error {
	return func(ctx context.Context) error {
		cs := &appsv1alpha1.CloneSet{}
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, cs); err != nil {
			return err
		}
		change(cs)
		if err := e.k8s.Update(ctx, cs); err != nil {
			return err
		}
		return e.settled(ctx, cs, func() bool {
			st, want := cs.Status, *cs.Spec.Replicas
			return st.ObservedGeneration == cs.Generation && st.Replicas == want && st.UpdatedAvailableReplicas == want
		})
	}
}

// statefulSet is cloneSet for the demo Advanced StatefulSet.
func (e *devEnv) statefulSet(name string, change func(*appsv1beta1.StatefulSet)) func(context.Context) error {
	return func(ctx context.Context) error {
		set := &appsv1beta1.StatefulSet{}
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, set); err != nil {
			return err
		}
		change(set)
		if err := e.k8s.Update(ctx, set); err != nil {
			return err
		}
		return e.settled(ctx, set, func() bool {
			st, want := set.Status, *set.Spec.Replicas
			return st.ObservedGeneration == set.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
				st.AvailableReplicas == want && st.CurrentRevision == st.UpdateRevision
		})
	}
}

// daemonSet is cloneSet for the demo Advanced DaemonSet.
func (e *devEnv) daemonSet(name string, change func(*appsv1beta1.DaemonSet)) func(context.Context) error {
	return func(ctx context.Context) error {
		set := &appsv1beta1.DaemonSet{}
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: "demo", Name: name}, set); err != nil {
			return err
		}
		change(set)
		if err := e.k8s.Update(ctx, set); err != nil {
			return err
		}
		return e.settled(ctx, set, func() bool {
			st := set.Status
			return st.ObservedGeneration == set.Generation && st.DesiredNumberScheduled > 0 && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
				st.NumberAvailable == st.DesiredNumberScheduled && st.CurrentNumberScheduled == st.DesiredNumberScheduled
		})
	}
}

// settled polls obj until done says it runs its spec.
func (e *devEnv) settled(ctx context.Context, obj client.Object, done func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, nil
		}
		return done(), nil
	})
}

func otherImage(t *corev1.PodTemplateSpec) string {
	if t.Spec.Containers[0].Image == "nginx:1.28" {
		return "nginx:1.27"
	}
	return "nginx:1.28"
}

// show prints every pod of the demo namespace with its lifecycle state and
// its registry entry, then the entries whose pods are gone.
func (e *devEnv) show(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := e.k8s.List(ctx, pods, client.InNamespace("demo")); err != nil {
		return err
	}
	resp, err := e.etcd.Get(ctx, "/services/demo/", clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("reading the registry: %w", err)
	}
	entries := map[string]bridge.Instance{}
	for _, kv := range resp.Kvs {
		var inst bridge.Instance
		if json.Unmarshal(kv.Value, &inst) == nil {
			entries[inst.Pod] = inst
		}
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tSTATE\tREADY\tREVISION\tREGISTRY")
	for _, p := range pods.Items {
		ready := "false"
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = "true"
			}
		}
		reg := "-"
		if inst, ok := entries[p.Name]; ok && inst.UID == string(p.UID) {
			reg = fmt.Sprintf("%s:%d at %s", inst.IP, inst.Port, inst.Revision)
			delete(entries, p.Name)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Labels[pub.LifecycleStateKey], ready, p.Labels["controller-revision-hash"], reg)
	}
	for name, inst := range entries {
		fmt.Fprintf(w, "%s\t(gone)\t\t\t%s:%d at %s\n", name, inst.IP, inst.Port, inst.Revision)
	}
	return w.Flush()
}
