// draalloc is the oracle of kubesched's differential test of its structured device allocator
// (src/kubesched/devices/allocator.py): it runs the real
// k8s.io/dynamic-resource-allocation/structured allocator at the pinned release, with the feature
// set kube-scheduler v1.37.2 passes it under default feature gates (which selects the
// "incubating" implementation).
//
// Input (stdin), one JSON object per line, the objects as the API server serves them:
//
//	{"node": Node, "claims": [ResourceClaim], "classes": [DeviceClass], "slices": [ResourceSlice],
//	 "allocatedDevices": ["driver/pool/device"],
//	 "allocatedSharedDevices": ["driver/pool/device/shareID"],
//	 "aggregatedCapacity": {"driver/pool/device": {"name": "quantity"}}}
//
// Output (stdout), one JSON object per input line:
//
//	{"results": [AllocationResult] | null, "error": "...", "failedOnNode": bool, "allocator": "incubating"}
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

type request struct {
	Node                   v1.Node                      `json:"node"`
	Claims                 []*resourceapi.ResourceClaim `json:"claims"`
	Classes                []*resourceapi.DeviceClass   `json:"classes"`
	Slices                 []*resourceapi.ResourceSlice `json:"slices"`
	AllocatedDevices       []string                     `json:"allocatedDevices"`
	AllocatedSharedDevices []string                     `json:"allocatedSharedDevices"`
	AggregatedCapacity     map[string]map[string]string `json:"aggregatedCapacity"`
}

type response struct {
	Results      []resourceapi.AllocationResult `json:"results"`
	Error        string                         `json:"error,omitempty"`
	FailedOnNode bool                           `json:"failedOnNode,omitempty"`
}

// kube-scheduler's AllocatorFeatures under v1.37.2's default gates. DRAFractionalCapacityRange is
// beta but only on from compatibility version 1.37, so off for a default (1.36-compatible) binary.
var features = structured.Features{
	AdminAccess:            true,
	PrioritizedList:        true,
	PartitionableDevices:   true,
	DeviceTaints:           true,
	DeviceBindingAndStatus: true,
	ConsumableCapacity:     true,
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, c := range l {
		out = append(out, c)
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

func deviceID(text string) (structured.DeviceID, error) {
	parts := strings.Split(text, "/")
	if len(parts) != 3 {
		return structured.DeviceID{}, fmt.Errorf("device id %q: want driver/pool/device", text)
	}
	return structured.MakeDeviceID(parts[0], parts[1], parts[2]), nil
}

func state(req *request) (structured.AllocatedState, error) {
	st := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, text := range req.AllocatedDevices {
		id, err := deviceID(text)
		if err != nil {
			return st, err
		}
		st.AllocatedDevices.Insert(id)
	}
	for _, text := range req.AllocatedSharedDevices {
		cut := strings.LastIndex(text, "/")
		id, err := deviceID(text[:cut])
		if err != nil {
			return st, err
		}
		share := types.UID(text[cut+1:])
		st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, &share))
	}
	for text, amounts := range req.AggregatedCapacity {
		id, err := deviceID(text)
		if err != nil {
			return st, err
		}
		consumed := map[resourceapi.QualifiedName]resource.Quantity{}
		for name, q := range amounts {
			value, err := resource.ParseQuantity(q)
			if err != nil {
				return st, fmt.Errorf("aggregated capacity %s %s: %w", text, name, err)
			}
			consumed[resourceapi.QualifiedName(name)] = value
		}
		st.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, consumed))
	}
	return st, nil
}

func answer(req *request) response {
	st, err := state(req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "draalloc: %v\n", err)
		os.Exit(2)
	}
	classes := classLister{}
	for _, c := range req.Classes {
		classes[c.Name] = c
	}
	ctx := context.Background()
	cache := dracel.NewCache(10, dracel.Features{EnableConsumableCapacity: true})
	allocator, err := structured.NewAllocator(ctx, features, st, classes, req.Slices, cache)
	if err != nil {
		return response{Error: "new allocator: " + err.Error()}
	}
	results, err := allocator.Allocate(ctx, &req.Node, req.Claims)
	if err != nil {
		return response{Error: err.Error(), FailedOnNode: errors.Is(err, structured.ErrFailedAllocationOnNode)}
	}
	return response{Results: results}
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "draalloc: bad input line: %v\n", err)
			os.Exit(2)
		}
		if err := out.Encode(answer(&req)); err != nil {
			fmt.Fprintf(os.Stderr, "draalloc: %v\n", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "draalloc: reading input: %v\n", err)
		os.Exit(1)
	}
}
