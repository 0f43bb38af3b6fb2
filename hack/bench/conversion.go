package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// conversionBench reads CloneSets stored as v1beta1 in both versions, side
// by side: a v1beta1 read is served from storage, a v1alpha1 read goes
// through the manager's conversion webhook. It prints the client's
// latency of each and the webhook's own (controller-runtime's
// controller_runtime_webhook_latency_seconds for /convert).
func (b *bench) conversionBench(ctx context.Context, objects, reads int) error {
	l := b.l
	ns, err := b.namespace(ctx, "bench-conversion")
	if err != nil {
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
		b.report.Conversion = append(b.report.Conversion, conversionRead{Read: c.name, Count: c.n,
			P50Ms: percentileMs(latencies, 0.5), P99Ms: percentileMs(latencies, 0.99)})
	}
	after, err := histogram(l.MetricsURL, "controller_runtime_webhook_latency_seconds", "webhook", "/convert")
	if err != nil {
		return err
	}
	b.report.Conversion = append(b.report.Conversion, conversionRead{Read: "conversion webhook, server side", Count: int(after.count - before.count),
		P50Ms: quantile(before, after, 0.5) * 1000, P99Ms: quantile(before, after, 0.99) * 1000})
	return b.dropNamespace(ctx, ns)
}

// conversionRead is one kind of read in the conversion scenario.
type conversionRead struct {
	Read  string  `json:"read"`
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}
