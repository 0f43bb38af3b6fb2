package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// conversionBench reads CloneSets stored as v1beta1 in both versions, side
// by side: a v1beta1 read is served from storage, a v1alpha1 read goes
// through the manager's conversion webhook. It prints the client's
// latency of each and the webhook's own (controller-runtime's
// controller_runtime_webhook_latency_seconds for /convert).
func (b *bench) conversionBench(ctx context.Context, l *cluster.Lifeline, objects, reads int) error {
	ns := "bench-conversion"
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; i < objects; i++ {
		labels := map[string]string{"app": "conversion"}
		cs := &appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)}, Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType}}}}
		if err := b.k8s.Create(ctx, cs); err != nil {
			return err
		}
	}
	fmt.Printf("conversion: %d CloneSets stored as v1beta1, %d reads of one and %d lists of all, in each version\n", objects, reads, reads/10)
	type run struct {
		name     string
		p50, p99 time.Duration
	}
	read := func(version string, list bool) (time.Duration, error) {
		start := time.Now()
		var err error
		if list {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("apps.kruise.io/" + version)
			l.SetKind("CloneSetList")
			err = b.k8s.List(ctx, l, ctrlclient.InNamespace(ns))
		} else {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("apps.kruise.io/" + version)
			o.SetKind("CloneSet")
			err = b.k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "c0"}, o)
		}
		return time.Since(start), err
	}
	before, err := histogram(l.MetricsURL, "controller_runtime_webhook_latency_seconds", "webhook", "/convert")
	if err != nil {
		return err
	}
	var runs []run
	for _, c := range []struct {
		name    string
		list    bool
		n       int
		version string
	}{
		{"get, v1beta1 (stored)", false, reads, "v1beta1"}, {"get, v1alpha1 (converted)", false, reads, "v1alpha1"},
		{fmt.Sprintf("list of %d, v1beta1", objects), true, reads / 10, "v1beta1"}, {fmt.Sprintf("list of %d, v1alpha1", objects), true, reads / 10, "v1alpha1"},
	} {
		var latencies []time.Duration
		for i := 0; i < c.n; i++ {
			d, err := read(c.version, c.list)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			latencies = append(latencies, d)
		}
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		at := func(q float64) time.Duration { return latencies[int(q*float64(len(latencies)-1))] }
		runs = append(runs, run{name: c.name, p50: at(0.5), p99: at(0.99)})
	}
	after, err := histogram(l.MetricsURL, "controller_runtime_webhook_latency_seconds", "webhook", "/convert")
	if err != nil {
		return err
	}
	fmt.Println("Reads of CloneSets stored as v1beta1 (a v1alpha1 read converts through the manager's webhook):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "read\tclient p50 ms\tclient p99 ms\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t\n", r.name, ms(r.p50), ms(r.p99))
	}
	fmt.Fprintf(tw, "conversion webhook (%d calls)\t%.2f\t%.2f\t\n", int(after.count-before.count), quantile(before, after, 0.5)*1000, quantile(before, after, 0.99)*1000)
	return tw.Flush()
}
