package lifecycle

import "testing"

func TestAddNotReadyReason(t *testing.T) {
	for _, tc := range []struct{ message, want string }{
		{"", `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		{`[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		{`[{"userAgent":"Lifecycle","key":"preUpdateHook"},{"userAgent":"ContainerRecreateRequest","key":"x"}]`,
			`[{"userAgent":"ContainerRecreateRequest","key":"x"},{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`},
		{"not json", `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
	} {
		if got := AddNotReadyReason(tc.message, "Lifecycle", "preDeleteHook"); got != tc.want {
			t.Errorf("AddNotReadyReason(%q) = %s, want %s", tc.message, got, tc.want)
		}
	}
}
