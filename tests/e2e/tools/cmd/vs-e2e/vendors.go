package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The device backends the fake nodes can carry and the emulated device plugins hand off
// (hami-vendors.md §0, §1.2, §1.8, §1.10): NVIDIA, Huawei Ascend (one backend per chip word) and
// Hygon DCU. All three take the shared node lock hami.io/mutex.lock at Bind, which their device
// plugin releases after the handoff.

const (
	vendorNVIDIA = "nvidia"
	vendorAscend = "ascend"
	vendorDCU    = "dcu"

	annoDCURegister = "hami.io/node-dcu-register"
	resourceDCU     = "hygon.com/dcunum"
	// The Ascend device plugin's node annotation: the node runs hami-vnpu-core (soft split).
	annoVNPUCore = "hami-vnpu-core"
)

var (
	ascendRegisterKey = regexp.MustCompile(`^hami\.io/node-register-(Ascend[0-9A-Za-z-]+)$`)
	// hami.io/<word>-devices-to-allocate / -allocated of an Ascend chip.
	ascendToAllocate = regexp.MustCompile(`^hami\.io/(Ascend[0-9A-Za-z-]+)-devices-to-allocate$`)
	ascendAllocated  = regexp.MustCompile(`^hami\.io/(Ascend[0-9A-Za-z-]+)-devices-allocated$`)
)

// deviceList is one vendor's device list on a pod: its annotation key and the word its entries'
// type field must carry (the device plugin looks for it to tell whether devices are left).
type deviceList struct {
	key, word, value string
}

// podDeviceLists: the pod's allocation lists of every known vendor, to-allocate (toAllocate
// true) or allocated, sorted by key.
func podDeviceLists(p *corev1.Pod, toAllocate bool) []deviceList {
	var out []deviceList
	for k, v := range p.Annotations {
		word := ""
		switch {
		case toAllocate && k == annoToAllocate, !toAllocate && k == annoAllocated:
			word = "NVIDIA"
		case toAllocate && k == "hami.io/dcu-devices-to-allocate", !toAllocate && k == "hami.io/dcu-devices-allocated":
			word = "DCU"
		case toAllocate && ascendToAllocate.MatchString(k):
			word = ascendToAllocate.FindStringSubmatch(k)[1]
		case !toAllocate && ascendAllocated.MatchString(k):
			word = ascendAllocated.FindStringSubmatch(k)[1]
		default:
			continue
		}
		out = append(out, deviceList{key: k, word: word, value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// deviceResource: a container resource that asks a device plugin for devices (the count
// resources of the known vendors).
func deviceResource(name corev1.ResourceName) bool {
	n := string(name)
	if n == resourceGPU || n == resourceDCU {
		return true
	}
	return strings.HasPrefix(n, "huawei.com/Ascend") && !strings.HasSuffix(n, "-memory") && !strings.HasSuffix(n, "-core")
}

// requestsDevice: some container asks for devices of a known vendor.
func requestsDevice(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for k, q := range l {
					if deviceResource(k) && !q.IsZero() {
						return true
					}
				}
			}
		}
	}
	return false
}

// ascendDevice is one element of hami.io/node-register-<word> as the Ascend device plugin
// writes it (HAMi's DeviceInfo with custominfo.NetworkID).
type ascendDevice struct {
	ID         string         `json:"id,omitempty"`
	Index      uint           `json:"index,omitempty"`
	Count      int32          `json:"count,omitempty"`
	Devmem     int32          `json:"devmem,omitempty"`
	Devcore    int32          `json:"devcore,omitempty"`
	Type       string         `json:"type,omitempty"`
	Numa       int            `json:"numa,omitempty"`
	Health     bool           `json:"health,omitempty"`
	CustomInfo map[string]any `json:"custominfo,omitempty"`
}

// vendorRegister: the node annotations, capacity resource and amount of one vendor's fake cards.
func vendorRegister(vendor, name string, o *nodeOpts) (map[string]string, corev1.ResourceName, int64, error) {
	bad, err := unhealthySet(o.unhealthy)
	if err != nil {
		return nil, "", 0, err
	}
	slots := int64(o.cards * o.split)
	switch vendor {
	case vendorNVIDIA:
		reg, err := registerValue(name, o)
		return map[string]string{annoRegister: reg}, resourceGPU, slots, err
	case vendorAscend:
		// As the Ascend plugin registers a 910 chip: NetworkID 0 for NPUs 0-3, 1 above (0 always
		// for 910C), type = the chip word.
		devs := make([]ascendDevice, 0, o.cards)
		for i := 0; i < o.cards; i++ {
			d := ascendDevice{ID: fmt.Sprintf("NPU-%s-%d", name, i), Index: uint(i), Count: int32(o.split),
				Devmem: int32(o.devmem), Devcore: int32(o.devcore), Type: o.word, Health: !bad[i]}
			if strings.HasPrefix(o.word, "Ascend910") {
				net := 0
				if i > 3 && o.word != "Ascend910C" {
					net = 1
				}
				d.CustomInfo = map[string]any{"NetworkID": net}
			}
			devs = append(devs, d)
		}
		b, err := json.Marshal(devs)
		return map[string]string{"hami.io/node-register-" + o.word: string(b), annoVNPUCore: strconv.FormatBool(o.vnpuCore)},
			corev1.ResourceName("huawei.com/" + o.word), slots, err
	case vendorDCU:
		// The dcu-vgpu-device-plugin's 7-field legacy text, one "id,count,MiB,cores,model,numa,health:" per card.
		var b strings.Builder
		for i := 0; i < o.cards; i++ {
			fmt.Fprintf(&b, "DCU-%s-%d,%d,%d,%d,%s,0,%t:", name, i, o.split, o.devmem, o.devcore, o.dcuType, !bad[i])
		}
		return map[string]string{annoDCURegister: b.String()}, resourceDCU, slots, nil
	}
	return nil, "", 0, fmt.Errorf("unknown vendor %q (nvidia, ascend, dcu)", vendor)
}

func unhealthySet(list string) (map[int]bool, error) {
	bad := map[int]bool{}
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		i, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("--unhealthy: %w", err)
		}
		bad[i] = true
	}
	return bad, nil
}

// regCard is one registered card of any vendor, as the capacity check needs it.
type regCard struct {
	uuid, word             string
	count, devmem, devcore int64
	health                 bool
}

// nodeCards: every card the node registers, all vendors, with a problem text per annotation that
// does not parse.
func nodeCards(n *corev1.Node) ([]regCard, []string) {
	var cards []regCard
	var problems []string
	keys := make([]string, 0, len(n.Annotations))
	for k := range n.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := n.Annotations[k]
		switch {
		case k == annoRegister:
			var devs []registerDevice
			if err := json.Unmarshal([]byte(v), &devs); err != nil {
				problems = append(problems, fmt.Sprintf("node %s: %s: %v", n.Name, k, err))
				continue
			}
			for _, d := range devs {
				cards = append(cards, regCard{uuid: d.ID, word: "NVIDIA", count: int64(d.Count), devmem: int64(d.Devmem),
					devcore: int64(d.Devcore), health: d.Health})
			}
		case ascendRegisterKey.MatchString(k):
			word := ascendRegisterKey.FindStringSubmatch(k)[1]
			var devs []ascendDevice
			if err := json.Unmarshal([]byte(v), &devs); err != nil {
				problems = append(problems, fmt.Sprintf("node %s: %s: %v", n.Name, k, err))
				continue
			}
			for _, d := range devs {
				cards = append(cards, regCard{uuid: d.ID, word: word, count: int64(d.Count), devmem: int64(d.Devmem),
					devcore: int64(d.Devcore), health: d.Health})
			}
		case k == annoDCURegister:
			for _, d := range strings.Split(strings.TrimSuffix(v, ":"), ":") {
				f := strings.Split(d, ",")
				if len(f) != 7 && len(f) != 9 {
					problems = append(problems, fmt.Sprintf("node %s: %s: device %q: want 7 or 9 fields", n.Name, k, d))
					continue
				}
				var nums [3]int64
				var err error
				for i := range nums {
					if nums[i], err = strconv.ParseInt(f[1+i], 10, 32); err != nil {
						break
					}
				}
				if err != nil {
					problems = append(problems, fmt.Sprintf("node %s: %s: device %q: %v", n.Name, k, d, err))
					continue
				}
				cards = append(cards, regCard{uuid: f[0], word: "DCU", count: nums[0], devmem: nums[1], devcore: nums[2],
					health: f[6] == "true"})
			}
		}
	}
	return cards, problems
}
