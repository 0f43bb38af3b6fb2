package cachetrim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// admitted is a pod as the API server stores it: the user's volume,
// mount and toleration, and the token volume, its mounts and the default
// tolerations that admission adds.
func admitted() *corev1.Pod {
	token := corev1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}},
	}}}
	data := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: token.Name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{
			Volumes:        []corev1.Volume{data, token},
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", VolumeMounts: mounts[1:]}},
			Containers:     []corev1.Container{{Name: "main", Image: "nginx", VolumeMounts: mounts}},
			Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true, VolumeMounts: []corev1.VolumeMountStatus{
			{Name: "data", MountPath: "/data"}, {Name: token.Name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		}}}},
	}
}

func TestTransformDropsWhatNoFeatureReads(t *testing.T) {
	want := admitted()
	want.ManagedFields = nil
	want.Spec.Volumes = want.Spec.Volumes[:1]
	want.Spec.InitContainers[0].VolumeMounts = nil
	want.Spec.Containers[0].VolumeMounts = want.Spec.Containers[0].VolumeMounts[:1]
	want.Spec.Tolerations = want.Spec.Tolerations[:1]
	want.Status.ContainerStatuses[0].VolumeMounts = want.Status.ContainerStatuses[0].VolumeMounts[:1]

	got, err := Transform(admitted())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed pod (-want +got):\n%s", diff)
	}
}

// A volume the user named like the token's but of another source is the
// user's, and stays with its mount.
func TestTransformKeepsAUsersVolumeNamedLikeTheToken(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes:    []corev1.Volume{{Name: "kube-api-access-mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-mine", MountPath: "/mine"}}}},
	}}
	if _, err := Transform(pod); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 || len(pod.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("volumes %v, mounts %v: want the user's emptyDir and its mount kept", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts)
	}
}

// Objects other than pods lose only their managedFields.
func TestTransformStripsManagedFieldsOfEveryObject(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	if _, err := Transform(node); err != nil {
		t.Fatal(err)
	}
	if node.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", node.ManagedFields)
	}
}
