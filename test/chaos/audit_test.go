package chaos

import (
	"os"
	"path/filepath"
	"testing"
)

// An event the API server's log backend cut short, with the next event
// written on the same line: the next one is read, the cut one counted.
func TestReadAuditWritesReadsPastACutEvent(t *testing.T) {
	write := func(verb, name string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"` + verb +
			`","userAgent":"lifeline-manager/v1","objectRef":{"resource":"pods","name":"` + name +
			`"},"requestReceivedTimestamp":"2026-11-27T00:47:32.128122Z"}`
	}
	cut := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"create","user":{"username":"lifeline-manager","groups":["system:authent`
	log := write("patch", "a") + "\n" + cut + write("delete", "b") + "\n" + write("get", "c") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	writes, unread, err := ReadAuditWrites(path, "lifeline-manager/")
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 || writes[0].Name != "a" || writes[1].Name != "b" || writes[1].Verb != "delete" || unread != 1 {
		t.Errorf("writes %+v, %d unread; want the patch of a and the delete of b, 1 unread", writes, unread)
	}
}
