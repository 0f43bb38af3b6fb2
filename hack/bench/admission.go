package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// admissionRow is what the API server's admission plugins spend on one
// kind of pod write, per write, with Lifeline's admission (its policies
// and webhook configurations, as the chart installs them) and with none of
// it (taken out for the while), in rounds that alternate the two (issue
// 43: a kubelet's status report of a pod Lifeline has nothing to do with
// should cost what it costs without Lifeline).
type admissionRow struct {
	Write  string `json:"write"`
	Writes int    `json:"writes_per_round"`
	// Each per round, in ms per write: every admission plugin with
	// Lifeline's admission and without it; of With, the
	// ValidatingAdmissionPolicy plugin and the two webhook plugins.
	With     []float64 `json:"with_ms"`
	Without  []float64 `json:"without_ms"`
	Policies []float64 `json:"policies_ms"`
	Webhooks []float64 `json:"webhooks_ms"`
}

// podWrite is one kind of write, the i-th on pod.
type podWrite struct {
	name, pods string // pods: the app label of the pods it writes
	write      func(ctx context.Context, c kubernetes.Interface, ns, pod string, i int) error
}

const admissionWrites, admissionRounds = 300, 3

var podWrites = []podWrite{
	{"a kubelet's status report, a Deployment's pod", "unmanaged", statusReport},
	{"a kubelet's status report, a CloneSet's pod", "managed", statusReport},
	{"a client's annotation, a Deployment's pod", "unmanaged", func(ctx context.Context, c kubernetes.Interface, ns, pod string, i int) error {
		_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.lifeline.dev/n":"%d"}}}`, i), metav1.PatchOptions{})
		return err
	}},
}

// statusReport changes a condition of the pod's status, as a kubelet's
// report does.
func statusReport(ctx context.Context, c kubernetes.Interface, ns, pod string, i int) error {
	patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":"bench.lifeline.dev/report","status":"True","message":"%d"}]}}`, i)
	_, err := c.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// admissionBench writes pods of a Deployment and of a CloneSet, ten each,
// in each kind of write, alternating rounds with and without Lifeline's
// admission, and reads each round's admission time from the API server's
// apiserver_admission_controller_admission_duration_seconds.
func (b *bench) admissionBench(ctx context.Context) error {
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	// The hook handlers' policy, as the chart installs it beside the
	// identities' (StartLifeline applied that one).
	if err := b.c.ApplyFiles(ctx, filepath.Join(root, "config", "bridge", "policy.yaml")); err != nil {
		return fmt.Errorf("applying the hook handlers' policy: %w", err)
	}
	ns, err := b.namespace(ctx, "bench-admission")
	if err != nil {
		return err
	}
	pods := map[string][]string{}
	for _, w := range []workload{
		{suite: suite{implementation: "Kubernetes", workload: "Deployment"}, ns: ns, name: "unmanaged"},
		{suite: suite{implementation: "Lifeline", workload: "CloneSet"}, ns: ns, name: "managed"},
	} {
		if pods[w.name], err = b.settledPods(ctx, w, 10); err != nil {
			return err
		}
	}
	probe, err := b.newAdmissionProbe(ctx, ns, pods["unmanaged"][0])
	if err != nil {
		return err
	}
	// A round that fails must not leave the later scenarios without
	// Lifeline's admission.
	defer func() { _ = probe.set(ctx, true) }()
	rows := make([]admissionRow, len(podWrites))
	for i, w := range podWrites {
		rows[i] = admissionRow{Write: w.name, Writes: admissionWrites}
	}
	for round := 0; round < 2*admissionRounds; round++ {
		with := round%2 == 0
		if err := probe.set(ctx, with); err != nil {
			return err
		}
		for i, w := range podWrites {
			all, policies, webhooks, err := b.admissionRound(ctx, w, ns, pods[w.pods], round)
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			if with {
				rows[i].With, rows[i].Policies, rows[i].Webhooks = append(rows[i].With, all), append(rows[i].Policies, policies), append(rows[i].Webhooks, webhooks)
			} else {
				rows[i].Without = append(rows[i].Without, all)
			}
		}
	}
	if err := probe.set(ctx, true); err != nil {
		return err
	}
	b.report.Admission = rows
	return b.dropNamespace(ctx, ns)
}

// settledPods creates w with n pods, waits until it has settled, and
// returns its pods' names.
func (b *bench) settledPods(ctx context.Context, w workload, n int32) ([]string, error) {
	if err := w.create(ctx, b.k8s, n); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return w.settled(ctx, b.k8s, n)
	}); err != nil {
		return nil, fmt.Errorf("%s settling: %w", w.name, err)
	}
	list, err := b.client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names, nil
}

// admissionRound makes admissionWrites writes of kind w on pods in turn
// and returns the admission plugins' ms per write: all of them, the
// policies' and the webhooks'.
func (b *bench) admissionRound(ctx context.Context, w podWrite, ns string, pods []string, round int) (all, policies, webhooks float64, err error) {
	before, err := b.apiServerMetrics(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	for i := range admissionWrites {
		if err := w.write(ctx, b.client, ns, pods[i%len(pods)], round*admissionWrites+i); err != nil {
			return 0, 0, 0, err
		}
	}
	after, err := b.apiServerMetrics(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	spent := func(plugins ...string) float64 {
		var s float64
		for _, p := range plugins {
			s += admissionSeconds(after, p) - admissionSeconds(before, p)
		}
		return 1000 * s / admissionWrites
	}
	return spent(""), spent("ValidatingAdmissionPolicy"), spent("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"), nil
}

// admissionSeconds is the time the admission plugin (every plugin when
// empty) spent on updates so far.
func admissionSeconds(families map[string]*dto.MetricFamily, plugin string) float64 {
	match := map[string]string{"operation": "UPDATE"}
	if plugin != "" {
		match["name"] = plugin
	}
	return sumHistograms(families["apiserver_admission_controller_admission_duration_seconds"], match).sum
}

// admissionProbe takes Lifeline's admission out of the cluster and puts it
// back, each time waiting until the API server acts on the change: a
// write only the identities' policy refuses (the manager deleting a pod of
// no workload of its, dry run) and one only the validating webhooks refuse
// (a CloneSet whose selector misses its template, dry run).
type admissionProbe struct {
	b        *bench
	manager  kubernetes.Interface
	ns, pod  string
	bindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	mutating *admissionregistrationv1.MutatingWebhookConfiguration
	validate *admissionregistrationv1.ValidatingWebhookConfiguration
	in       bool
}

var lifelineBindings = []string{"lifeline-identities.lifeline.dev", "lifeline-hook-handlers.lifeline.dev"}

func (b *bench) newAdmissionProbe(ctx context.Context, ns, pod string) (*admissionProbe, error) {
	path, err := b.c.WriteKubeconfig("lifeline-manager", cluster.ManagersGroup)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	p := &admissionProbe{b: b, manager: kubernetes.NewForConfigOrDie(cfg), ns: ns, pod: pod, in: true}
	adm := b.client.AdmissionregistrationV1()
	for _, name := range lifelineBindings {
		binding, err := adm.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		p.bindings = append(p.bindings, *binding)
	}
	if p.mutating, err = adm.MutatingWebhookConfigurations().Get(ctx, mutatingWebhooks, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	if p.validate, err = adm.ValidatingWebhookConfigurations().Get(ctx, validatingWebhooks, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	return p, p.wait(ctx)
}

// set puts Lifeline's admission in (true) or takes it out.
func (p *admissionProbe) set(ctx context.Context, in bool) error {
	if p.in == in {
		return nil
	}
	adm := p.b.client.AdmissionregistrationV1()
	for _, binding := range p.bindings {
		if in {
			fresh := binding.DeepCopy()
			fresh.ObjectMeta = metav1.ObjectMeta{Name: binding.Name, Labels: binding.Labels}
			if _, err := adm.ValidatingAdmissionPolicyBindings().Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
				return err
			}
		} else if err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	if in {
		m, v := p.mutating.DeepCopy(), p.validate.DeepCopy()
		m.ObjectMeta = metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: m.Annotations}
		v.ObjectMeta = metav1.ObjectMeta{Name: v.Name, Labels: v.Labels, Annotations: v.Annotations}
		if _, err := adm.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return err
		}
	} else {
		if err := adm.MutatingWebhookConfigurations().Delete(ctx, p.mutating.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		if err := adm.ValidatingWebhookConfigurations().Delete(ctx, p.validate.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	p.in = in
	return p.wait(ctx)
}

// wait returns once both probes say what p.in says.
func (p *admissionProbe) wait(ctx context.Context) error {
	dry := []string{metav1.DryRunAll}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		policy := p.manager.CoreV1().Pods(p.ns).Delete(ctx, p.pod, metav1.DeleteOptions{DryRun: dry})
		cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "probe"}, Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "elsewhere"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
		webhook := p.b.k8s.Create(ctx, cs, ctrlclient.DryRunAll)
		policyIn := policy != nil && strings.Contains(policy.Error(), "the manager deletes only")
		webhookIn := webhook != nil && strings.Contains(webhook.Error(), "does not match template")
		last = fmt.Sprintf("policy: %v; webhook: %v", policy, webhook)
		return policyIn == p.in && webhookIn == p.in, nil
	})
	if err != nil {
		return fmt.Errorf("Lifeline's admission in=%v not in force: %w (%s)", p.in, err, last)
	}
	return nil
}

func printAdmission(r *report) {
	if len(r.Admission) == 0 {
		return
	}
	fmt.Printf("\nAdmission per pod write: ms of the API server's admission plugins, each round %d writes; rounds with and without Lifeline's admission (its policies and webhook configurations) alternate:\n", admissionWrites)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  write\twith Lifeline's\twithout\tof with: policies\twebhooks")
	for _, a := range r.Admission {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", a.Write, msRange(a.With), msRange(a.Without), msRange(a.Policies), msRange(a.Webhooks))
	}
	tw.Flush()
}

// msRange is a figure over rounds: its median, and its range.
func msRange(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.2f (%.2f–%.2f)", median(xs), lo, hi)
}
