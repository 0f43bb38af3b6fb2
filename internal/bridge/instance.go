package bridge

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Instance is what the registry holds for one pod.
type Instance struct {
	IP        string            `json:"ip"`
	Port      int32             `json:"port"`
	Pod       string            `json:"pod"`
	Namespace string            `json:"namespace"`
	Node      string            `json:"node"`
	Revision  string            `json:"revision"`
	Labels    map[string]string `json:"labels,omitempty"`
	// UID is the pod's UID, by which the entry of a pod replaced by one of
	// the same name is told apart.
	UID string `json:"uid"`
	// Workload is the name of the pod's workload (a CloneSet or an
	// Advanced StatefulSet), part of its key, not of its value.
	Workload string `json:"-"`
}

// ID names an instance in the registry: <namespace>/<workload>/<pod>. Pod
// names are unique in a namespace, so a CloneSet and an Advanced
// StatefulSet of the same name never share an id.
func (i Instance) ID() string { return i.Namespace + "/" + i.Workload + "/" + i.Pod }

// instanceOf is the registry entry of pod, whose workload is named
// workload. A pod without an IP, or without the named port, has none yet.
func instanceOf(pod *corev1.Pod, workload string, port int32, portName string) (Instance, error) {
	if pod.Status.PodIP == "" {
		return Instance{}, fmt.Errorf("pod %s/%s has no IP yet", pod.Namespace, pod.Name)
	}
	if portName != "" {
		port = 0
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == portName {
					port = p.ContainerPort
				}
			}
		}
		if port == 0 {
			return Instance{}, fmt.Errorf("pod %s/%s has no container port named %q", pod.Namespace, pod.Name, portName)
		}
	}
	return Instance{
		IP: pod.Status.PodIP, Port: port, Pod: pod.Name, Namespace: pod.Namespace, Node: pod.Spec.NodeName,
		Revision: pod.Labels["controller-revision-hash"], Labels: pod.Labels, UID: string(pod.UID), Workload: workload,
	}, nil
}
