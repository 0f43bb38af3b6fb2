package integration

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// A fixed second-precision time: the API server stores RFC 3339 seconds.
var stamp = metav1.NewTime(time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC))

// loadSample strictly decodes a manifest of config/samples, so a field the
// Go types do not know fails the test instead of being dropped silently.
func loadSample(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s does not decode strictly: %v", name, err)
	}
}

func intOrStr(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// fullCloneSet sets every field of the CloneSet API, spec and status.
func fullCloneSet() *appsv1alpha1.CloneSet {
	hook := func(label, finalizer string) *pub.LifecycleHook {
		return &pub.LifecycleHook{
			LabelsHandler:     map[string]string{label: "true"},
			FinalizersHandler: []string{finalizer},
			MarkPodNotReady:   true,
		}
	}
	return &appsv1alpha1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "full"},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "full"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "full", "tier": "web"}, Annotations: map[string]string{"config": "v1"}},
				Spec: corev1.PodSpec{
					ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}},
					Containers: []corev1.Container{{
						Name:            "main",
						Image:           "nginx:1.27",
						ImagePullPolicy: corev1.PullAlways,
						Env: []corev1.EnvVar{
							{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"},
							{Name: "CONFIG", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['config']"}}},
						},
						Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"disk": "ssd"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			ScaleStrategy: appsv1alpha1.CloneSetScaleStrategy{
				PodsToDelete:    []string{"full-abcde"},
				MaxUnavailable:  intOrStr("50%"),
				DisablePVCReuse: true,
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type:           appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				Partition:      intOrStr("25%"),
				MaxUnavailable: intOrStr("2"),
				MaxSurge:       intOrStr("1"),
				Paused:         true,
				PriorityStrategy: &pub.UpdatePriorityStrategy{
					OrderPriority: []pub.UpdatePriorityOrderTerm{{OrderedKey: "order"}},
					WeightPriority: []pub.UpdatePriorityWeightTerm{{
						Weight:        50,
						MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
					}},
				},
				ScatterStrategy: appsv1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "zone-a"}},
				InPlaceUpdateStrategy: &pub.InPlaceUpdateStrategy{
					GracePeriodSeconds:                  10,
					ImagePreDownloadParallelism:         intOrStr("5"),
					ImagePreDownloadTimeoutSeconds:      ptr.To[int32](600),
					ImagePreDownloadMinUpdatedReadyPods: ptr.To[int32](1),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](5),
			MinReadySeconds:      3,
			Lifecycle: &pub.Lifecycle{
				PreDelete:     hook("example.com/delete-blocker", "example.com/delete"),
				InPlaceUpdate: hook("example.com/update-blocker", "example.com/update"),
				PreNormal:     hook("example.com/online", "example.com/online"),
			},
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
		Status: appsv1alpha1.CloneSetStatus{
			ObservedGeneration:       1,
			Replicas:                 4,
			ReadyReplicas:            3,
			AvailableReplicas:        2,
			UpdatedReplicas:          2,
			UpdatedReadyReplicas:     2,
			UpdatedAvailableReplicas: 1,
			ExpectedUpdatedReplicas:  3,
			UpdateRevision:           "full-7c9d8f6b5",
			CurrentRevision:          "full-59f4d6c8b",
			CollisionCount:           ptr.To[int32](1),
			Conditions: []appsv1alpha1.CloneSetCondition{{
				Type:               appsv1alpha1.CloneSetConditionTypeProgressing,
				Status:             corev1.ConditionTrue,
				LastUpdateTime:     stamp,
				LastTransitionTime: stamp,
				Reason:             appsv1alpha1.CloneSetProgressUpdated,
				Message:            "CloneSet is progressing",
			}},
			LabelSelector: "app=full,tier in (web)",
		},
	}
}

// fullPersistentPodState sets every field of the PersistentPodState API.
func fullPersistentPodState() *appsv1alpha1.PersistentPodState {
	return &appsv1alpha1.PersistentPodState{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "PersistentPodState"},
		ObjectMeta: metav1.ObjectMeta{Name: "echoserver"},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "echoserver"},
			PersistentPodAnnotations:   []appsv1alpha1.PersistentPodAnnotation{{Key: "cni.projectcalico.org/podIP"}},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"topology.kubernetes.io/zone"}},
			PreferredPersistentTopology: []appsv1alpha1.PreferredTopologyTerm{{
				Weight:     100,
				Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"kubernetes.io/hostname"}},
			}},
			PersistentPodStateRetentionPolicy: appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted,
		},
		Status: appsv1alpha1.PersistentPodStateStatus{
			ObservedGeneration: 1,
			PodStates: map[string]appsv1alpha1.PodState{"echoserver-0": {
				NodeName:           "kwok-node-1",
				NodeTopologyLabels: map[string]string{"topology.kubernetes.io/zone": "zone-b", "kubernetes.io/hostname": "kwok-node-1"},
				Annotations:        map[string]string{"cni.projectcalico.org/podIP": "10.244.0.9"},
			}},
			Conditions: []metav1.Condition{{Type: "TargetReady", Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)), Reason: "Found", Message: "following StatefulSet echoserver"}},
		},
	}
}

// fullPodUnavailableBudget sets every field of the PodUnavailableBudget API.
// The webhook of a later issue forbids selector with targetRef and
// maxUnavailable with minAvailable together; the schema alone accepts them,
// and storing them all proves each field round-trips.
func fullPodUnavailableBudget() *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: "policy.kruise.io/v1alpha1", Kind: "PodUnavailableBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub", Annotations: map[string]string{
			policyv1alpha1.PubProtectOperationAnnotation: "DELETE,EVICT",
		}},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"pub-controller": "true"}},
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "webserver"},
			MaxUnavailable:  intOrStr("25%"),
			MinAvailable:    intOrStr("1"),
		},
		Status: policyv1alpha1.PodUnavailableBudgetStatus{
			ObservedGeneration: 1,
			DisruptedPods:      map[string]metav1.Time{"webserver-1": stamp},
			UnavailablePods:    map[string]metav1.Time{"webserver-2": stamp},
			UnavailableAllowed: 1,
			CurrentAvailable:   7,
			DesiredAvailable:   6,
			TotalReplicas:      8,
			Conditions: []metav1.Condition{{Type: policyv1alpha1.ConditionProtecting, Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: stamp, Reason: "WebhooksServeNamespace", Message: "Lifeline's pod webhooks judge the disruptions of this namespace"}},
		},
	}
}

// requireAllFieldsSet fails if any field of Lifeline's own API structs in v
// is left at its zero value, so a field added to the API later must be added
// to the fixtures, and so to the round-trip test, too. Types from other
// modules (pod templates, selectors) are only required to be non-zero.
func requireAllFieldsSet(t *testing.T, v any) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.IsZero() {
			t.Errorf("fixture leaves %s unset", path)
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			walk(path, v.Elem())
		case reflect.Slice:
			walk(path+"[0]", v.Index(0))
		case reflect.Map:
			iter := v.MapRange()
			iter.Next()
			walk(path+"["+iter.Key().String()+"]", iter.Value())
		case reflect.Struct:
			if !strings.HasPrefix(v.Type().PkgPath(), "github.com/lifeline-k8s/lifeline/") {
				return
			}
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if f.Anonymous { // TypeMeta, ObjectMeta
					continue
				}
				walk(path+"."+f.Name, v.Field(i))
			}
		}
	}
	walk(reflect.TypeOf(v).Elem().Name(), reflect.ValueOf(v))
}
