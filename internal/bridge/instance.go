package bridge

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// CloneSet is the pod's CloneSet, part of its key, not of its value.
	CloneSet string `json:"-"`
}

// ID names an instance in the registry: <namespace>/<cloneset>/<pod>.
func (i Instance) ID() string { return i.Namespace + "/" + i.CloneSet + "/" + i.Pod }

// instanceOf is the registry entry of pod, whose CloneSet is cloneSet. A
// pod without an IP, or without the named port, has none yet.
func instanceOf(pod *corev1.Pod, cloneSet string, port int32, portName string) (Instance, error) {
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
		Revision: pod.Labels["controller-revision-hash"], Labels: pod.Labels, UID: string(pod.UID), CloneSet: cloneSet,
	}, nil
}

// idOf is the registry id of pod, from its controlling CloneSet, or "".
func idOf(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "CloneSet" {
		return ""
	}
	return pod.Namespace + "/" + ref.Name + "/" + pod.Name
}
