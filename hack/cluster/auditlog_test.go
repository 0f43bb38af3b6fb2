package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Each event is passed on alone, a line holding a cut event and the next
// one included, from the offset on.
func TestEachAuditEventSplitsACutLine(t *testing.T) {
	a, b, c := `{"kind":"Event","verb":"get"}`, `{"kind":"Event","verb":"patch"}`, `{"kind":"Event","verb":"delete"}`
	cut := `{"kind":"Event","user":{"groups":["system:authent`
	log := a + "\n" + cut + b + "\n" + c + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := EachAuditEvent(path, int64(len(a)+1), func(event []byte) { got = append(got, string(event)) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{cut, b, c}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
