package conversion

import (
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
)

// TestRoundTrip fills objects of each kind and version at random, in the
// manner of Kubernetes' API round-trip fuzzing, converts each to the other
// version and back, and requires the result to equal the original. What
// OpenKruise's conversion loses, and Lifeline therefore loses too, is listed
// in the canonical* functions below: both sides are put in canonical form
// before they are compared, so any other loss fails the test.
//
// LIFELINE_FUZZ_ITERATIONS sets the objects per kind and direction (default
// 1000); the seed is printed so that a failure can be replayed with
// LIFELINE_FUZZ_SEED.
func TestRoundTrip(t *testing.T) {
	n := envInt(t, "LIFELINE_FUZZ_ITERATIONS", 1000)
	seed := int64(envInt(t, "LIFELINE_FUZZ_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d, %d objects per kind and direction", seed, n)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, fillFuncs), rand.NewSource(seed),
		serializer.NewCodecFactory(scheme)).NilChance(0.2).NumElements(0, 3).MaxDepth(8)

	cases := []struct {
		name      string
		from, via func() runtime.Object
		canonical func(runtime.Object)
	}{
		{"CloneSet v1alpha1", func() runtime.Object { return &appsv1alpha1.CloneSet{} },
			func() runtime.Object { return &appsv1beta1.CloneSet{} }, canonicalAlphaCloneSet},
		{"CloneSet v1beta1", func() runtime.Object { return &appsv1beta1.CloneSet{} },
			func() runtime.Object { return &appsv1alpha1.CloneSet{} }, canonicalBetaCloneSet},
		{"PodUnavailableBudget v1alpha1", func() runtime.Object { return &policyv1alpha1.PodUnavailableBudget{} },
			func() runtime.Object { return &policyv1beta1.PodUnavailableBudget{} }, canonicalAlphaBudget},
		{"PodUnavailableBudget v1beta1", func() runtime.Object { return &policyv1beta1.PodUnavailableBudget{} },
			func() runtime.Object { return &policyv1alpha1.PodUnavailableBudget{} }, canonicalBetaBudget},
		{"PersistentPodState v1alpha1", func() runtime.Object { return &appsv1alpha1.PersistentPodState{} },
			func() runtime.Object { return &appsv1beta1.PersistentPodState{} }, func(runtime.Object) {}},
		{"PersistentPodState v1beta1", func() runtime.Object { return &appsv1beta1.PersistentPodState{} },
			func() runtime.Object { return &appsv1alpha1.PersistentPodState{} }, func(runtime.Object) {}},
		{"StatefulSet v1alpha1", func() runtime.Object { return &appsv1alpha1.StatefulSet{} },
			func() runtime.Object { return &appsv1beta1.StatefulSet{} }, func(runtime.Object) {}},
		{"StatefulSet v1beta1", func() runtime.Object { return &appsv1beta1.StatefulSet{} },
			func() runtime.Object { return &appsv1alpha1.StatefulSet{} }, canonicalBetaStatefulSet},
		{"DaemonSet v1alpha1", func() runtime.Object { return &appsv1alpha1.DaemonSet{} },
			func() runtime.Object { return &appsv1beta1.DaemonSet{} }, canonicalAlphaDaemonSet},
		{"DaemonSet v1beta1", func() runtime.Object { return &appsv1beta1.DaemonSet{} },
			func() runtime.Object { return &appsv1alpha1.DaemonSet{} }, canonicalBetaDaemonSet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < n; i++ {
				original := c.from()
				f.Fill(original)
				kept := original.DeepCopyObject()
				via, back := c.via(), c.from()
				if err := Convert(original, via); err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				if err := Convert(via, back); err != nil {
					t.Fatalf("object %d back: %v", i, err)
				}
				if !apiequality.Semantic.DeepEqual(original, kept) {
					t.Fatalf("object %d: the conversion changed its source", i)
				}
				c.canonical(original)
				c.canonical(back)
				if !apiequality.Semantic.DeepEqual(original, back) {
					t.Fatalf("object %d changed in the round trip:\n%s", i, objectDiff(original, back))
				}
			}
		})
	}
}

// fillFuncs keep random objects to what the API server would store: the
// annotations and values the conversion reads are drawn from lists that
// include the malformed ones, and pod templates stay small.
var fillFuncs = func(serializer.CodecFactory) []any {
	return []any{
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			t.Labels = map[string]string{"app": c.String(5)}
			t.Spec.Containers = []corev1.Container{{Name: "main", Image: c.String(8)}}
		},
		func(p *corev1.PersistentVolumeClaim, c randfill.Continue) {
			p.Name = c.String(5)
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31n(100))
			} else {
				*v = intstr.FromString(strconv.Itoa(int(c.Int31n(100))) + "%")
			}
		},
		func(cs *appsv1alpha1.CloneSet, c randfill.Continue) {
			c.FillNoCustom(cs)
			cs.Spec.UpdateStrategy.Type = pick[appsv1alpha1.CloneSetUpdateStrategyType](c, "", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "OnDelete", "Rolling")
			randomAnnotations(c, &cs.Annotations, preDownloadValues)
			randomLabel(c, &cs.Labels, appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey, "true", "false")
		},
		func(cs *appsv1beta1.CloneSet, c randfill.Continue) {
			c.FillNoCustom(cs)
			u := &cs.Spec.UpdateStrategy
			u.Type = pick[appsv1beta1.CloneSetUpdateStrategyType](c, "", "RollingUpdate", "OnDelete", "Partitioned")
			if u.RollingUpdate != nil {
				u.RollingUpdate.PodUpdatePolicy = pick[appsv1beta1.CloneSetPodUpdateStrategyType](c, "", "ReCreate", "InPlaceIfPossible", "InPlaceOnly", "Rebuild")
				if c.Intn(4) == 0 {
					u.RollingUpdate.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{}
				}
			}
			randomAnnotations(c, &cs.Annotations, preDownloadValues)
			randomLabel(c, &cs.Labels, appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey, "true", "false")
		},
		func(ds *appsv1alpha1.DaemonSet, c randfill.Continue) {
			c.FillNoCustom(ds)
			if r := ds.Spec.UpdateStrategy.RollingUpdate; r != nil {
				r.Type = pick[appsv1alpha1.RollingUpdateType](c, "", "Standard", "InPlaceIfPossible", "Surging")
			}
			randomAnnotations(c, &ds.Annotations, progressiveValues)
		},
		func(ds *appsv1beta1.DaemonSet, c randfill.Continue) {
			c.FillNoCustom(ds)
			randomAnnotations(c, &ds.Annotations, progressiveValues)
		},
		func(b *policyv1alpha1.PodUnavailableBudget, c randfill.Continue) {
			c.FillNoCustom(b)
			randomAnnotations(c, &b.Annotations, map[string][]string{
				policyv1alpha1.PubProtectOperationAnnotation:     {"", "DELETE", " DELETE, EVICT,", "UPDATE,RESIZE", ","},
				policyv1alpha1.PubProtectTotalReplicasAnnotation: {"3", "05", "-1"},
			})
		},
		func(b *policyv1beta1.PodUnavailableBudget, c randfill.Continue) {
			c.FillNoCustom(b)
			b.Spec.ProtectOperations = nil
			for _, op := range []policyv1beta1.PubOperation{"DELETE", "UPDATE", "EVICT", "RESIZE"} {
				if c.Bool() {
					b.Spec.ProtectOperations = append(b.Spec.ProtectOperations, op)
				}
			}
			randomAnnotations(c, &b.Annotations, map[string][]string{
				policyv1alpha1.PubProtectOperationAnnotation:     {"DELETE"},
				policyv1alpha1.PubProtectTotalReplicasAnnotation: {"7"},
			})
		},
	}
}

var progressiveValues = map[string][]string{appsv1alpha1.ProgressiveCreatePodAnnotation: {"true", "false", ""}}

var preDownloadValues = map[string][]string{
	appsv1alpha1.ImagePreDownloadParallelismKey:      {"", "5", "007", "50%", "abc"},
	appsv1alpha1.ImagePreDownloadTimeoutSecondsKey:   {"", "600", "abc"},
	appsv1alpha1.ImagePreDownloadMinUpdatedReadyPods: {"2", "x"},
}

func pick[T ~string](c randfill.Continue, values ...T) T { return values[c.Intn(len(values))] }

// randomAnnotations sets each key, or not, to one of its values.
func randomAnnotations(c randfill.Continue, annotations *map[string]string, values map[string][]string) {
	for key, options := range values {
		if c.Bool() {
			if *annotations == nil {
				*annotations = map[string]string{}
			}
			(*annotations)[key] = pick(c, options...)
		}
	}
}

func randomLabel(c randfill.Continue, labels *map[string]string, key string, values ...string) {
	randomAnnotations(c, labels, map[string][]string{key: values})
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func objectDiff(a, b runtime.Object) string { return diff.Diff(a, b) }
