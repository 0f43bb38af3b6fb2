package podfacts

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestMetadataEnvReadsKeyedLabelsAndAnnotationsOnly(t *testing.T) {
	c := corev1.Container{Env: []corev1.EnvVar{
		fieldEnv("COLOR", "metadata.labels['color']"),
		fieldEnv("OWNER", "metadata.annotations['example.com/owner']"),
		fieldEnv("ALL", "metadata.labels"),
		fieldEnv("NAME", "metadata.name"),
		fieldEnv("SHADOWED", "metadata.labels['gone']"),
		{Name: "SHADOWED", Value: "plain"},
	}}
	got := MetadataEnv(c)
	want := map[string]string{"COLOR": "metadata.labels['color']", "OWNER": "metadata.annotations['example.com/owner']"}
	if len(got) != len(want) || got["COLOR"] != want["COLOR"] || got["OWNER"] != want["OWNER"] {
		t.Errorf("MetadataEnv = %v, want %v", got, want)
	}
	if !ReadsMetadataKeys(c, []string{"color"}, nil) || !ReadsMetadataKeys(c, nil, []string{"example.com/owner"}) {
		t.Error("the keys the env reads are not found")
	}
	if ReadsMetadataKeys(c, []string{"example.com/owner", "gone"}, []string{"color"}) {
		t.Error("a key of the other map, or one a later definition replaced, counts")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"color": "blue"}}}
	values := MetadataEnvValues(pod, c)
	if values["COLOR"] != "blue" || values["OWNER"] != "" || len(values) != 2 {
		t.Errorf("MetadataEnvValues = %v", values)
	}
	if EnvHash(values) == EnvHash(map[string]string{"COLOR": "green", "OWNER": ""}) || EnvHash(nil) != 0 {
		t.Error("EnvHash does not tell the values apart")
	}
}

func TestEnvFromMetadataUpdatedWaitsForTheAgentsReportOnTheRunningContainer(t *testing.T) {
	c := corev1.Container{Name: "app", Env: []corev1.EnvVar{fieldEnv("COLOR", "metadata.labels['color']")}}
	pod := func(report *pub.RuntimeContainerMetaSet) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"color": "green"}, Annotations: map[string]string{}},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{c, {Name: "sidecar"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://new"}, {Name: "sidecar", ContainerID: "containerd://s"}}}}
		if report != nil {
			raw, _ := json.Marshal(report)
			p.Annotations[pub.RuntimeContainerMetaKey] = string(raw)
		}
		return p
	}
	report := func(id string, color string) *pub.RuntimeContainerMetaSet {
		return &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{{Name: "app", ContainerID: id,
			Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: EnvHash(map[string]string{"COLOR": color})}}}}
	}
	st := &pub.InPlaceUpdateState{UpdateEnvFromMetadata: true}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		st   *pub.InPlaceUpdateState
		want bool
	}{
		{"no env from metadata changed", pod(report("containerd://old", "blue")), &pub.InPlaceUpdateState{}, true},
		{"no agent on the node", pod(nil), st, true},
		{"the report is of the container before", pod(report("containerd://old", "green")), st, false},
		{"the running container has the old values", pod(report("containerd://new", "blue")), st, false},
		{"the running container has the new values", pod(report("containerd://new", "green")), st, true},
		{"the report leaves the container out", pod(&pub.RuntimeContainerMetaSet{}), st, false},
	} {
		if got := EnvFromMetadataUpdated(tc.pod, tc.st); got != tc.want {
			t.Errorf("%s: EnvFromMetadataUpdated = %v, want %v", tc.name, got, tc.want)
		}
	}
}
