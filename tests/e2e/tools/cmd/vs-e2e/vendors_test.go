package main

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The registers the fake nodes carry read back as the same cards, vendor by vendor.
func TestVendorRegistersReadBack(t *testing.T) {
	o := &nodeOpts{cards: 5, split: 4, devmem: 65536, devcore: 20, numa: 1, gpuType: "NVIDIA A10", mode: "hami-core",
		word: "Ascend910B3", dcuType: "DCU-K100_AI", unhealthy: "1"}
	annos := map[string]string{}
	for _, v := range []string{vendorAscend, vendorDCU} {
		regs, res, n, err := vendorRegister(v, "n1", o)
		if err != nil {
			t.Fatal(err)
		}
		if n != 20 {
			t.Errorf("%s: capacity %s = %d, want 20", v, res, n)
		}
		for k, val := range regs {
			annos[k] = val
		}
	}
	if got, want := annos["hami.io/node-register-Ascend910B3"],
		`[{"id":"NPU-n1-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","health":true,"custominfo":{"NetworkID":0}},{"id":"NPU-n1-1","index":1,"count":4,"devmem":65536`; !strings.HasPrefix(got, want) {
		t.Errorf("ascend register:\n got %s\nwant %s", got, want)
	}
	if got, want := annos[annoDCURegister], "DCU-n1-0,4,65536,20,DCU-K100_AI,0,true:DCU-n1-1,4,65536,20,DCU-K100_AI,0,false:"; !strings.HasPrefix(got, want) {
		t.Errorf("dcu register: got %s want %s", got, want)
	}
	cards, problems := nodeCards(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: annos}})
	if len(problems) != 0 || len(cards) != 10 {
		t.Fatalf("cards %d, problems %v", len(cards), problems)
	}
	// Keys in order: hami.io/node-dcu-register < hami.io/node-register-Ascend910B3.
	if want := (regCard{uuid: "DCU-n1-1", word: "DCU", count: 4, devmem: 65536, devcore: 20}); cards[1] != want {
		t.Errorf("card 1 = %+v, want %+v", cards[1], want)
	}
	if want := (regCard{uuid: "NPU-n1-4", word: "Ascend910B3", count: 4, devmem: 65536, devcore: 20, health: true}); cards[9] != want {
		t.Errorf("card 9 = %+v, want %+v", cards[9], want)
	}
}

// Every vendor's lists are found on a pod, with the word their entries must carry; the decoder
// refuses a list whose type field is another vendor's.
func TestPodDeviceLists(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		"hami.io/vgpu-devices-to-allocate":          "GPU-a,NVIDIA,1000,0:;",
		"hami.io/dcu-devices-to-allocate":           "DCU-a,DCU,1000,10:;",
		"hami.io/Ascend910B4-1-devices-to-allocate": "NPU-a,Ascend910B4-1,16384,0:;",
		"hami.io/Ascend910B4-1-devices-allocated":   "NPU-a,Ascend910B4-1,16384,0:;",
		"hami.io/other": "x",
	}}}
	got := podDeviceLists(p, true)
	want := []deviceList{
		{"hami.io/Ascend910B4-1-devices-to-allocate", "Ascend910B4-1", "NPU-a,Ascend910B4-1,16384,0:;"},
		{"hami.io/dcu-devices-to-allocate", "DCU", "DCU-a,DCU,1000,10:;"},
		{"hami.io/vgpu-devices-to-allocate", "NVIDIA", "GPU-a,NVIDIA,1000,0:;"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("to-allocate lists %+v, want %+v", got, want)
	}
	if got := podDeviceLists(p, false); len(got) != 1 || got[0].word != "Ascend910B4-1" {
		t.Errorf("allocated lists %+v", got)
	}
	if _, err := decodeAllocated("NPU-a,Ascend910B4,16384,0:;", "Ascend910B4-1"); err == nil {
		t.Errorf("a 910B4 entry decoded as a 910B4-1 list")
	}
	if d, err := decodeAllocated(";NPU-a,Ascend910B4-1,16384,0:;", "Ascend910B4-1"); err != nil || len(d) != 2 || d[1][0].mem != 16384 {
		t.Errorf("decoded %+v, %v", d, err)
	}
}

func TestPlainRequest(t *testing.T) {
	q := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	type res struct {
		word       string
		mem, cores int64
		ok         bool
	}
	for _, c := range []struct {
		lim  corev1.ResourceList
		want res
	}{
		{q("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "150"), res{"NVIDIA", 1000, 100, true}},
		{q("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), res{"NVIDIA", 1000, 0, false}},
		{q("hygon.com/dcunum", "1", "hygon.com/dcumem", "2000"), res{"DCU", 2000, 100, true}},
		{q("huawei.com/Ascend910B3", "1", "huawei.com/Ascend910B3-memory", "16384"), res{"Ascend910B3", 16384, 0, true}},
		{q("huawei.com/Ascend910B3", "2", "huawei.com/Ascend910B3-memory", "65536"), res{"Ascend910B3", 65536, 0, false}},
		{q("nvidia.com/gpu", "1", "hygon.com/dcunum", "1"), res{"", 0, 0, false}},
	} {
		w, m, cr, ok := plainRequest(c.lim)
		if got := (res{w, m, cr, ok}); got != c.want {
			t.Errorf("%v: got %+v, want %+v", c.lim, got, c.want)
		}
	}
}
