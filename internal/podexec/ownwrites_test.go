package podexec

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestOwnWrites(t *testing.T) {
	var w OwnWrites
	key := types.NamespacedName{Namespace: "ns", Name: "db"}
	if !w.Seen(key, "5") {
		t.Fatal("nothing written, not seen")
	}
	w.Wrote(key, "10")
	if w.Seen(key, "9") {
		t.Fatal("a cache behind our write counts as seen")
	}
	if !w.Seen(key, "10") || !w.Seen(key, "3") {
		t.Fatal("the write shown, then forgotten: any version is seen")
	}
	w.Wrote(key, "x10")
	if !w.Seen(key, "x9") {
		t.Fatal("versions that do not compare wait for ever")
	}
}
