package cluster

import "testing"

func TestExecNameIsWhatGoBuildWrites(t *testing.T) {
	for pkg, want := range map[string]string{
		"go.etcd.io/etcd/server/v3":                       "server",
		"k8s.io/kubernetes/cmd/kube-apiserver":            "kube-apiserver",
		"sigs.k8s.io/controller-tools/cmd/controller-gen": "controller-gen",
		"github.com/hashicorp/consul":                     "consul",
		"helm.sh/helm/v4/cmd/helm":                        "helm",
	} {
		if got := execName(pkg); got != want {
			t.Errorf("execName(%s) = %s, want %s", pkg, got, want)
		}
	}
}
