package webhook

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// valid is a defaulted set every case starts from.
func valid() *appsv1beta1.StatefulSet {
	sts := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1beta1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db:1"}}},
			},
		},
	}
	Default(sts, nil, Options{AutoDeletePVC: true})
	return sts
}

// An error as the test expects it: field path, type and OpenKruise's words.
type want struct {
	field  string
	typ    field.ErrorType
	detail string
}

func TestValidateCreate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*appsv1beta1.StatefulSet)
		want   []want
	}{
		{"valid", func(*appsv1beta1.StatefulSet) {}, nil},
		{"name not a DNS label", func(s *appsv1beta1.StatefulSet) { s.Name = "db.x" },
			[]want{{"metadata.name", field.ErrorTypeInvalid, "must not contain dots"}}},
		{"pod management policy", func(s *appsv1beta1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" },
			[]want{{"spec.podManagementPolicy", field.ErrorTypeInvalid, "must be 'OrderedReady' or 'Parallel'"}}},
		{"reserve ordinals: a numeric string, a reversed range and a negative int, all at once", func(s *appsv1beta1.StatefulSet) {
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromString("5"), intstr.FromString("7-3"), intstr.FromInt32(-1), intstr.FromString("1-2")}
		}, []want{
			{"spec", field.ErrorTypeInvalid, "0 th reserve ordinal is not a valid range: 5"},
			{"spec", field.ErrorTypeInvalid, "0 th reserve ordinal is invalid: 5, err = invalid range 5"},
			{"spec", field.ErrorTypeInvalid, "1 th reserve ordinal is invalid: 7-3, err = invalid range 7-3"},
			{"spec", field.ErrorTypeInvalid, "2 th reserve ordinal is negative: -1"},
		}},
		{"maxUnavailable above 1 needs Parallel", func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("50%"))}
		}, []want{
			{"spec.scaleStrategy.maxUnavailable", field.ErrorTypeInvalid, "can only work with Parallel PodManagementPolicyType"},
			{"spec.updateStrategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid, "can only work with Parallel PodManagementPolicyType"},
		}},
		{"maxUnavailable 0 and a bad percent", func(s *appsv1beta1.StatefulSet) {
			s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
			s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromString("half"))}
		}, []want{
			{"spec.scaleStrategy.maxUnavailable", field.ErrorTypeInvalid, "a valid percent string must be"},
			{"spec.scaleStrategy.maxUnavailable", field.ErrorTypeInvalid, "getValueFromIntOrPercent error"},
			{"spec.updateStrategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid, "should not be less than 1"},
		}},
		{"rolling update knobs", func(s *appsv1beta1.StatefulSet) {
			ru := s.Spec.UpdateStrategy.RollingUpdate
			ru.Partition, ru.MinReadySeconds, ru.PodUpdatePolicy = ptr.To[int32](-1), ptr.To[int32](301), "Rebuild"
			ru.UnorderedUpdate = &appsv1beta1.UnorderedUpdateStrategy{PriorityStrategy: &pub.UpdatePriorityStrategy{
				OrderPriority: []pub.UpdatePriorityOrderTerm{{}},
			}}
		}, []want{
			{"spec.updateStrategy.rollingUpdate.partition", field.ErrorTypeInvalid, "must be greater than or equal to 0"},
			{"spec.updateStrategy.rollingUpdate.minReadySeconds", field.ErrorTypeInvalid, "must be no more than 300 seconds"},
			{"spec.updateStrategy.rollingUpdate.podUpdatePolicy", field.ErrorTypeInvalid, "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'"},
			{"spec.updateStrategy.rollingUpdate.unorderedUpdate", field.ErrorTypeRequired, "unorderedUpdate can only work with Parallel PodManagementPolicyType"},
			{"spec.updateStrategy.rollingUpdate.unorderedUpdate.priorityStrategy", field.ErrorTypeRequired, "order key can not be empty"},
		}},
		{"in place needs the readiness gate", func(s *appsv1beta1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
		}, []want{{"spec.template.spec.readinessGates", field.ErrorTypeInvalid, "must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible"}}},
		{"OnDelete with rolling update knobs", func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			[]want{{"spec.updateStrategy.rollingUpdate", field.ErrorTypeInvalid, "only allowed for updateStrategy 'RollingUpdate'"}}},
		{"unknown update strategy", func(s *appsv1beta1.StatefulSet) { s.Spec.UpdateStrategy.Type = "Rolling" },
			[]want{{"spec.updateStrategy", field.ErrorTypeInvalid, "must be 'RollingUpdate' or 'OnDelete'"}}},
		{"retention policy", func(s *appsv1beta1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep"}
		}, []want{
			{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted", field.ErrorTypeNotSupported, `"Retain", "Delete"`},
			{"spec.persistentVolumeClaimRetentionPolicy.whenScaled", field.ErrorTypeNotSupported, `"Retain", "Delete"`},
		}},
		{"replicas", func(s *appsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](-2) },
			[]want{{"spec.replicas", field.ErrorTypeInvalid, "must be greater than or equal to 0"}}},
		{"selector does not match the template", func(s *appsv1beta1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "web"} },
			[]want{{"spec.template.metadata.labels", field.ErrorTypeInvalid, "`selector` does not match template `labels`"}}},
		{"empty selector", func(s *appsv1beta1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]want{{"spec.selector", field.ErrorTypeInvalid, "empty selector is invalid for statefulset"}}},
		{"pod template: restart policy, deadline, no containers", func(s *appsv1beta1.StatefulSet) {
			s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
		}, []want{
			{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported, `"Always"`},
			{"spec.template.spec.activeDeadlineSeconds", field.ErrorTypeForbidden, "activeDeadlineSeconds in StatefulSet is not Supported"},
		}},
		{"a hook label a pod could never carry", func(s *appsv1beta1.StatefulSet) {
			s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"bad key!": "true"}}}
		}, []want{{"spec.lifecycle.preDelete.labelsHandler", field.ErrorTypeInvalid, "name part must consist of"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sts := valid()
			c.change(sts)
			assertErrors(t, ValidateCreate(sts), c.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*appsv1beta1.StatefulSet)
		want   []want
	}{
		{"every mutable field", func(s *appsv1beta1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](5)
			s.Spec.Template.Spec.Containers[0].Image = "db:2"
			s.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1)}
			s.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 2}
			s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}}}
			s.Spec.RevisionHistoryLimit = ptr.To[int32](3)
			s.Spec.ScaleStrategy = &appsv1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
			s.Spec.VolumeClaimUpdateStrategy.Type = appsv1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType
			s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
			s.Spec.UpdateStrategy.RollingUpdate.Paused = true
		}, nil},
		{"selector, service and policy are frozen", func(s *appsv1beta1.StatefulSet) {
			s.Spec.ServiceName = "other"
		}, []want{{"spec", field.ErrorTypeForbidden, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', `volumeClaimTemplates`, `VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden"}}},
		{"InPlaceOnly changes images only", func(s *appsv1beta1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		}, []want{{"spec.template.spec", field.ErrorTypeForbidden, "invalid template modified with InPlaceOnly strategy: add /containers/0/env, currently only image update is allowed for InPlaceOnly"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := valid()
			if strings.HasPrefix(c.name, "InPlaceOnly") {
				old.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
				old.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy = appsv1beta1.InPlaceOnlyPodUpdateStrategyType
			}
			sts := old.DeepCopy()
			c.change(sts)
			assertErrors(t, ValidateUpdate(sts, old), c.want)
		})
	}
}

// assertErrors requires exactly the wanted errors, in any order.
func assertErrors(t *testing.T, errs field.ErrorList, wanted []want) {
	t.Helper()
	left := append(field.ErrorList{}, errs...)
	for _, w := range wanted {
		found := -1
		for i, e := range left {
			if e.Field == w.field && e.Type == w.typ && strings.Contains(e.Error(), w.detail) {
				found = i
				break
			}
		}
		if found < 0 {
			t.Errorf("missing error %s %s %q in %v", w.field, w.typ, w.detail, errs)
			continue
		}
		left = append(left[:found], left[found+1:]...)
	}
	for _, e := range left {
		t.Errorf("unexpected error: %v", e)
	}
}
