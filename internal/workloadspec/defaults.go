// Package workloadspec defaults and validates what every workload's spec
// shares, as OpenKruise does for each: the pod template and volume claim
// templates, the lifecycle hooks and the update priority strategy; and
// makes a workload's new pods and claims from those templates. The
// workloads' own webhooks and controllers call it, so a rule changes for
// all of them at once.
package workloadspec

import (
	corev1 "k8s.io/api/core/v1"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
)

// The template defaults are OpenKruise's, not those of the Kubernetes
// version we link against: the revision name hashes the defaulted
// template, so any default OpenKruise does not set gives a migrated
// workload a new revision and rolls all its pods. OpenKruise applies the
// hand-written parts of Kubernetes' pod defaulting (SetDefaults_*) to the
// pod spec, its containers, probes, ports, env and volumes, but not the
// generated ones: no grpc.service "" on gRPC probes, nothing inside an
// ephemeral volume's claim template (no volumeMode), and on claim
// templates only the status phase and quantities, not volumeMode. The
// golden vectors in internal/revision/testdata, recorded from
// OpenKruise v1.9.0's own code, check every case.

// DefaultTemplates fills in a workload's pod template and volume claim
// templates as OpenKruise does for every workload.
func DefaultTemplates(tmpl *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) {
	defaultPodSpec(&tmpl.Spec)
	for i := range claims {
		defaultClaimTemplate(&claims[i])
	}
}

// defaultPodSpec fills in a template's pod spec as OpenKruise does.
func defaultPodSpec(spec *corev1.PodSpec) {
	corev1defaults.SetDefaults_PodSpec(spec)
	defaultVolumes(spec.Volumes)
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		// Always, whatever the tag: an in-place update to a new image
		// behind the same tag must pull it.
		if spec.Containers[i].ImagePullPolicy == "" {
			spec.Containers[i].ImagePullPolicy = corev1.PullAlways
		}
		defaultContainer(&spec.Containers[i])
	}
}

func defaultContainer(c *corev1.Container) {
	corev1defaults.SetDefaults_Container(c)
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil {
			corev1defaults.SetDefaults_ObjectFieldSelector(from.FieldRef)
		}
	}
	corev1defaults.SetDefaults_ResourceList(&c.Resources.Limits)
	corev1defaults.SetDefaults_ResourceList(&c.Resources.Requests)
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if probe != nil {
			corev1defaults.SetDefaults_Probe(probe)
			defaultHTTPGet(probe.HTTPGet)
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

func defaultHTTPGet(get *corev1.HTTPGetAction) {
	if get != nil {
		corev1defaults.SetDefaults_HTTPGetAction(get)
	}
}

func defaultVolumes(volumes []corev1.Volume) {
	for i := range volumes {
		v := &volumes[i]
		corev1defaults.SetDefaults_Volume(v)
		if v.HostPath != nil {
			corev1defaults.SetDefaults_HostPathVolumeSource(v.HostPath)
		}
		if v.Secret != nil {
			corev1defaults.SetDefaults_SecretVolumeSource(v.Secret)
		}
		if v.ConfigMap != nil {
			corev1defaults.SetDefaults_ConfigMapVolumeSource(v.ConfigMap)
		}
		if v.DownwardAPI != nil {
			corev1defaults.SetDefaults_DownwardAPIVolumeSource(v.DownwardAPI)
			defaultDownwardAPIItems(v.DownwardAPI.Items)
		}
		if p := v.Projected; p != nil {
			corev1defaults.SetDefaults_ProjectedVolumeSource(p)
			for j := range p.Sources {
				if p.Sources[j].DownwardAPI != nil {
					defaultDownwardAPIItems(p.Sources[j].DownwardAPI.Items)
				}
				if p.Sources[j].ServiceAccountToken != nil {
					corev1defaults.SetDefaults_ServiceAccountTokenProjection(p.Sources[j].ServiceAccountToken)
				}
			}
		}
	}
}

func defaultDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			corev1defaults.SetDefaults_ObjectFieldSelector(items[i].FieldRef)
		}
	}
}

// defaultClaimTemplate fills in a volumeClaimTemplate as OpenKruise does.
func defaultClaimTemplate(pvc *corev1.PersistentVolumeClaim) {
	corev1defaults.SetDefaults_PersistentVolumeClaim(pvc)
	corev1defaults.SetDefaults_ResourceList(&pvc.Spec.Resources.Limits)
	corev1defaults.SetDefaults_ResourceList(&pvc.Spec.Resources.Requests)
	corev1defaults.SetDefaults_ResourceList(&pvc.Status.Capacity)
}
