package cluster

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestRealisticProfileDelaysEveryKubeletStage(t *testing.T) {
	instant, err := Instant.Stages()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Realistic.Stages()
	if err != nil {
		t.Fatal(err)
	}
	type stage struct {
		Metadata struct{ Name string }
		Spec     struct {
			Weight   int
			Selector any
			Delay    *struct{ DurationMilliseconds, JitterDurationMilliseconds int64 }
		}
	}
	byName := map[string]stage{}
	for _, d := range docs {
		var s stage
		if err := yaml.Unmarshal([]byte(d), &s); err != nil {
			t.Fatal(err)
		}
		byName[s.Metadata.Name] = s
	}
	if len(docs) != len(instant)+1 {
		t.Errorf("%d realistic stages, want the %d instant ones with pod-start split in two", len(docs), len(instant))
	}
	for name, want := range map[string][3]int64{
		"pod-start-0": {90, 500, 1500}, "pod-start-1": {10, 1500, 5400},
		"pod-inplace-update-0": {0, 800, 1200}, "pod-delete-0": {0, 1500, 2500},
	} {
		s, ok := byName[name]
		if !ok || s.Spec.Delay == nil {
			t.Errorf("stage %s: missing or without a delay", name)
			continue
		}
		if got := [3]int64{int64(s.Spec.Weight), s.Spec.Delay.DurationMilliseconds, s.Spec.Delay.JitterDurationMilliseconds}; got != want {
			t.Errorf("stage %s: weight and delay %v, want %v", name, got, want)
		}
	}
	// kwok picks between stages by weight only when their selectors are
	// the same.
	a, _ := yaml.Marshal(byName["pod-start-0"].Spec.Selector)
	b, _ := yaml.Marshal(byName["pod-start-1"].Spec.Selector)
	if string(a) != string(b) || !strings.Contains(string(a), "podIP") {
		t.Errorf("pod-start's two stages select differently:\n%s\n%s", a, b)
	}
	if s, ok := byName["pod-readiness"]; !ok || s.Spec.Delay != nil {
		t.Errorf("pod-readiness: %+v, want it as in the instant profile (the kubelet recomputes Ready at once)", s)
	}
}
