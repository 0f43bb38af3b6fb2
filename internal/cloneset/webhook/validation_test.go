package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// pods is a PodGetter over a fixed set of pods.
type pods map[string]*corev1.Pod

func (p pods) GetPod(_ context.Context, _, name string) (*corev1.Pod, error) {
	if pod, ok := p[name]; ok {
		return pod, nil
	}
	return nil, fmt.Errorf("pod %q not found", name)
}

func validCloneSet() *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "cs-uid"}}
	cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cs.Spec.Template.Labels = map[string]string{"app": "web"}
	cs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:1.27"}}
	Default(cs, nil)
	return cs
}

func hasError(errs field.ErrorList, path, message string) bool {
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Error(), message) {
			return true
		}
	}
	return false
}

func TestValidateCreate(t *testing.T) {
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-a", OwnerReferences: []metav1.OwnerReference{{UID: "cs-uid", Controller: ptr.To(true)}}}}
	theirs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	getter := pods{"web-a": mine, "other": theirs}
	if errs := ValidateCreate(context.Background(), getter, validCloneSet()); len(errs) != 0 {
		t.Fatalf("a valid CloneSet: %v", errs)
	}
	for _, tc := range []struct {
		name, path, message string
		change              func(*appsv1alpha1.CloneSet)
	}{
		{"no selector", "spec.selector", "Required value", func(c *appsv1alpha1.CloneSet) { c.Spec.Selector = nil }},
		{"selector not matching", "spec.template.metadata.labels", "`selector` does not match template `labels`", func(c *appsv1alpha1.CloneSet) {
			c.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
		}},
		{"OnDelete", "spec.updateStrategy.type", "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'", func(c *appsv1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.Type = "OnDelete"
		}},
		{"fractional percent is fine, a word is not", "spec.updateStrategy.partition", "is not a percentage", func(c *appsv1alpha1.CloneSet) {
			c.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("12.5%"))
			c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("half"))
		}},
		{"podsToDelete of another owner's pod", "spec.scaleStrategy.podsToDelete", "owner is not this CloneSet", func(c *appsv1alpha1.CloneSet) {
			c.Spec.ScaleStrategy.PodsToDelete = []string{"web-a", "other"}
		}},
		{"labelsHandler key", "spec.lifecycle.inPlaceUpdate.labelsHandler", "name part must consist", func(c *appsv1alpha1.CloneSet) {
			c.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"a b": "c"}}}
		}},
		{"finalizer without a domain", "spec.lifecycle.preNormal.finalizersHandler[1]", "neither a standard finalizer name", func(c *appsv1alpha1.CloneSet) {
			c.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/ok", "registered"}}}
		}},
		{"deadline within minReadySeconds", "spec.progressDeadlineSeconds", "must be greater than minReadySeconds", func(c *appsv1alpha1.CloneSet) {
			c.Spec.MinReadySeconds, c.Spec.ProgressDeadlineSeconds = 30, ptr.To[int32](30)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := validCloneSet()
			tc.change(cs)
			errs := ValidateCreate(context.Background(), getter, cs)
			if !hasError(errs, tc.path, tc.message) {
				t.Errorf("want %s: %q; got %v", tc.path, tc.message, errs)
			}
		})
	}

	// Several wrong fields: every error at once.
	cs := validCloneSet()
	cs.Spec.UpdateStrategy.Type = "OnDelete"
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"drain"}}}
	cs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	errs := ValidateCreate(context.Background(), getter, cs)
	for _, want := range []string{"spec.updateStrategy.type", "spec.lifecycle.preDelete.finalizersHandler[0]", "spec.template.spec.restartPolicy"} {
		if !hasError(errs, want, "") {
			t.Errorf("no error at %s among %v", want, errs)
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	old := validCloneSet()
	old.ResourceVersion = "1"
	old.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	changed := old.DeepCopy()
	changed.Spec.Selector.MatchLabels["tier"] = "x"
	changed.Spec.Template.Labels["tier"] = "x"
	if errs := ValidateUpdate(context.Background(), pods{}, changed, old); !hasError(errs, "spec", "updates to cloneset spec for fields other than") {
		t.Errorf("selector change: %v", errs)
	}
	env := old.DeepCopy()
	env.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
	if errs := ValidateUpdate(context.Background(), pods{}, env, old); !hasError(errs, "spec", "only allowed to update images in spec for InPlaceOnly") {
		t.Errorf("InPlaceOnly env change: %v", errs)
	}
	image := old.DeepCopy()
	image.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	if errs := ValidateUpdate(context.Background(), pods{}, image, old); len(errs) != 0 {
		t.Errorf("InPlaceOnly image change: %v", errs)
	}
}

func TestDefault(t *testing.T) {
	cs := &appsv1alpha1.CloneSet{}
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:1.27",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}}}}
	cs.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{}}}}}}
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	Default(cs, nil)
	us := cs.Spec.UpdateStrategy
	if *cs.Spec.Replicas != 1 || *cs.Spec.RevisionHistoryLimit != appsv1alpha1.DefaultCloneSetRevisionHistoryLimit || us.InPlaceUpdateStrategy == nil ||
		us.Partition.String() != "0" || us.MaxUnavailable.String() != "20%" || us.MaxSurge.String() != "0" {
		t.Errorf("spec defaults: %+v", cs.Spec)
	}
	c := cs.Spec.Template.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullAlways || c.ReadinessProbe.PeriodSeconds != 10 || c.ReadinessProbe.GRPC.Service != nil {
		t.Errorf("container defaults (OpenKruise's: Always, probe periods, no grpc.service): %+v", c)
	}
	if cs.Spec.Template.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.VolumeMode != nil || cs.Spec.VolumeClaimTemplates[0].Spec.VolumeMode != nil ||
		cs.Spec.VolumeClaimTemplates[0].Status.Phase != corev1.ClaimPending {
		t.Errorf("claim template defaults (OpenKruise's: phase only, no volumeMode): %+v %+v", cs.Spec.Template.Spec.Volumes[0], cs.Spec.VolumeClaimTemplates[0])
	}

	// An update that leaves the template alone leaves it undefaulted, so
	// re-applying an old manifest starts no rollout.
	old := cs.DeepCopy()
	bare := old.DeepCopy()
	bare.Spec.Template.Spec.Containers[0].ImagePullPolicy = ""
	old.Spec.Template = bare.Spec.Template
	Default(bare, old)
	if bare.Spec.Template.Spec.Containers[0].ImagePullPolicy != "" {
		t.Error("an unchanged template was defaulted on update")
	}
}
