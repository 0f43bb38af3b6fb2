package cluster

import (
	"strings"
	"testing"
)

func TestFreeSpaceSaysWhatAndWhere(t *testing.T) {
	dir := t.TempDir()
	if err := freeSpace(dir+"/not/yet/made", 1, "the test's data"); err != nil {
		t.Errorf("1 byte is not free under %s: %v", dir, err)
	}
	err := freeSpace(dir, 1<<62, "the test's data")
	if err == nil || !strings.Contains(err.Error(), "the test's data needs") || !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
		t.Errorf("an impossible need: %v, want one line naming what and where", err)
	}
}
