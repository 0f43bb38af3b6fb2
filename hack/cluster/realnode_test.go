package cluster

import (
	"encoding/json"
	"net"
	"slices"
	"testing"
)

func TestUpstreamVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.6.20~ds1-1+deb12u3": "1.6.20", "1.1.5+ds1-1+deb12u1": "1.1.5", "1.1.1+ds1-3+b5": "1.1.1", "2.0": "2.0",
	} {
		if got := upstream(in); got != want {
			t.Errorf("upstream(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIPAddCarries(t *testing.T) {
	if got := ipAdd(net.IPv4(198, 18, 0, 252), 4); !got.Equal(net.IPv4(198, 18, 1, 0)) {
		t.Errorf("198.18.0.252 + 4 = %s", got)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/tmp/a\040b`); got != "/tmp/a b" {
		t.Errorf("got %q", got)
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		path, dir string
		want      bool
	}{{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/a/b", "/a/", true}} {
		if got := within(c.path, c.dir); got != c.want {
			t.Errorf("within(%q, %q) = %v", c.path, c.dir, got)
		}
	}
}

// Each node's pods get their own quarter of the pod network, and the CNI
// configuration names it.
func TestCNIConfigPerNode(t *testing.T) {
	var subnets []string
	for _, name := range []string{"real-node-0", "real-node-1", "real-node-2", "real-node-3"} {
		var conf struct {
			Plugins []struct {
				Type string
				IPAM struct {
					Ranges [][]struct{ Subnet string }
				}
			}
		}
		if err := json.Unmarshal([]byte(cniConfig(&realNode{name: name, dir: "/x"})), &conf); err != nil {
			t.Fatal(err)
		}
		subnet := conf.Plugins[0].IPAM.Ranges[0][0].Subnet
		_, network, _ := net.ParseCIDR(podNetwork)
		ip, _, err := net.ParseCIDR(subnet)
		if err != nil || !network.Contains(ip) || conf.Plugins[0].Type != "lifeline-cni" {
			t.Errorf("%s: %+v (%v)", name, conf, err)
		}
		subnets = append(subnets, subnet)
	}
	slices.Sort(subnets)
	if len(slices.Compact(subnets)) != 4 {
		t.Errorf("subnets %v, want 4 distinct", subnets)
	}
}

func TestListsUnixSocketReadsTheTablesPathColumn(t *testing.T) {
	table := []byte(`Num       RefCount Protocol Flags    Type St Inode Path
000000009b0336d4: 00000003 00000000 00000000 0001 03  1606
00000000a1b2c3d4: 00000002 00000000 00010000 0001 01 24912 /var/lib/kubelet/device-plugins/kubelet.sock.old
00000000a1b2c3d5: 00000002 00000000 00010000 0001 01 24913 @/var/lib/kubelet/device-plugins/kubelet.sock
`)
	if listsUnixSocket(table, devicePluginSocket) {
		t.Errorf("a table without %s lists it", devicePluginSocket)
	}
	table = append(table, "00000000a1b2c3d6: 00000002 00000000 00010000 0001 01 24914 /var/lib/kubelet/device-plugins/kubelet.sock\n"...)
	if !listsUnixSocket(table, devicePluginSocket) {
		t.Errorf("a table with %s does not list it", devicePluginSocket)
	}
}
