package cluster

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Profile is how long the simulated kubelets take: kwok's stages, with or
// without delays.
type Profile string

const (
	// Instant: every transition as soon as kwok sees it.
	Instant Profile = "instant"
	// Realistic: a pod starts in about 1 s at the median and 5 s at p99,
	// as the Kubernetes pod start-up SLO measures with images present; an
	// in-place container restart takes about 1 s; graceful termination
	// about 2 s.
	Realistic Profile = "realistic"
)

// delay is a kwok stage delay: uniform between from and to milliseconds.
type delay struct{ from, to int64 }

// realistic are the delays of the realistic profile by stage. A stage
// with two delays is split in two stages that kwok picks between by weight
// (same selector): 90% start in 0.5–1.5 s and 10% in 1.5–5.4 s, which puts
// the median near 1.06 s and p99 near 5 s.
var realistic = map[string][]struct {
	weight int
	delay  delay
}{
	"pod-start":          {{90, delay{500, 1500}}, {10, delay{1500, 5400}}},
	"pod-inplace-update": {{0, delay{800, 1200}}},
	"pod-delete":         {{0, delay{1500, 2500}}},
}

// Stages are the profile's kwok stages, one YAML document each.
func (p Profile) Stages() ([]string, error) {
	entries, err := StageFiles.ReadDir("stages")
	if err != nil {
		return nil, err
	}
	var docs []string
	for _, e := range entries {
		data, err := StageFiles.ReadFile("stages/" + e.Name())
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(e.Name(), ".yaml")
		variants, delayed := realistic[name]
		switch {
		case p == Instant || !delayed:
			docs = append(docs, string(data))
		case p == Realistic:
			for i, v := range variants {
				doc, err := withDelay(data, fmt.Sprintf("%s-%d", name, i), v.weight, v.delay)
				if err != nil {
					return nil, fmt.Errorf("stage %s: %w", name, err)
				}
				docs = append(docs, doc)
			}
		default:
			return nil, fmt.Errorf("unknown profile %q", p)
		}
	}
	return docs, nil
}

// withDelay is the stage with another name, a weight and a delay.
func withDelay(stage []byte, name string, weight int, d delay) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return "", err
	}
	obj["metadata"].(map[string]any)["name"] = name
	spec := obj["spec"].(map[string]any)
	if weight > 0 {
		spec["weight"] = weight
	}
	spec["delay"] = map[string]any{"durationMilliseconds": d.from, "jitterDurationMilliseconds": d.to}
	out, err := yaml.Marshal(obj)
	return string(out), err
}
