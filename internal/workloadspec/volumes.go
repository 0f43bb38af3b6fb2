package workloadspec

import corev1 "k8s.io/api/core/v1"

// ClaimVolumes are a new pod's volumes: one per volumeClaimTemplate, named
// after it and pointing at the pod's claim (claimName of the template's
// name), in place of a template volume of the same name; the template's
// other volumes follow. Without claim templates the volumes are returned
// as they are.
func ClaimVolumes(volumes []corev1.Volume, claims []corev1.PersistentVolumeClaim, claimName func(template string) string) []corev1.Volume {
	if len(claims) == 0 {
		return volumes
	}
	claimed := map[string]bool{}
	out := make([]corev1.Volume, 0, len(claims)+len(volumes))
	for _, vct := range claims {
		claimed[vct.Name] = true
		out = append(out, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(vct.Name)},
		}})
	}
	for _, v := range volumes {
		if !claimed[v.Name] {
			out = append(out, v)
		}
	}
	return out
}
