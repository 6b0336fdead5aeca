// dracel is the oracle of kubesched's differential test of its DRA device CEL environment
// (src/kubesched/devices/cel.py): it compiles and evaluates selector expressions with the real
// k8s.io/dynamic-resource-allocation/cel at the pinned release.
//
// Input (stdin), one JSON object per line:
//
//	{"expression": "...", "devices": [{"driver": "...", "allowMultipleAllocations": true,
//	  "attributes": {"name": {"int": 1} | {"bool": true} | {"string": "s"} | {"version": "1.2.3"}},
//	  "capacity": {"name": "4Gi"}}]}
//
// Output (stdout), one JSON object per input line:
//
//	{"validation": {"error": "...", "errorType": "...", "maxCost": N},  // the API server's compile (new expressions)
//	 "scheduler": {"error": "..."},                                      // the scheduler's cache (stored expressions)
//	 "results": [{"matches": bool, "error": "..."}]}                     // DeviceMatches per device, errors enhanced
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type attribute struct {
	Int     *int64  `json:"int,omitempty"`
	Bool    *bool   `json:"bool,omitempty"`
	String  *string `json:"string,omitempty"`
	Version *string `json:"version,omitempty"`
}

type device struct {
	Driver                   string               `json:"driver"`
	AllowMultipleAllocations *bool                `json:"allowMultipleAllocations,omitempty"`
	Attributes               map[string]attribute `json:"attributes"`
	Capacity                 map[string]string    `json:"capacity"`
}

type request struct {
	Expression string   `json:"expression"`
	Devices    []device `json:"devices"`
}

type compiled struct {
	Error     string  `json:"error,omitempty"`
	ErrorType string  `json:"errorType,omitempty"`
	MaxCost   *uint64 `json:"maxCost,omitempty"`
}

type result struct {
	Matches bool   `json:"matches"`
	Error   string `json:"error,omitempty"`
}

type response struct {
	Validation compiled `json:"validation"`
	Scheduler  compiled `json:"scheduler"`
	Results    []result `json:"results"`
}

// The feature gates at their v1.37 defaults: DRAConsumableCapacity on (beta), DRAListTypeAttributes off (alpha).
var features = dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: false}

func main() {
	cache := dracel.NewCache(10, features)
	compiler := dracel.GetCompiler(features)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "dracel: bad input line: %v\n", err)
			os.Exit(2)
		}
		var resp response
		newExpressions := environment.NewExpressions
		validated := compiler.CompileCELExpression(req.Expression, dracel.Options{EnvType: &newExpressions})
		if validated.Error != nil {
			resp.Validation.Error = validated.Error.Detail
			resp.Validation.ErrorType = string(validated.Error.Type)
		} else {
			cost := validated.MaxCost
			resp.Validation.MaxCost = &cost
		}
		expr := cache.GetOrCompile(req.Expression)
		if expr.Error != nil {
			resp.Scheduler.Error = expr.Error.Detail
			resp.Scheduler.ErrorType = string(expr.Error.Type)
		} else {
			for _, d := range req.Devices {
				resp.Results = append(resp.Results, evaluate(expr, d))
			}
		}
		if err := out.Encode(resp); err != nil {
			fmt.Fprintf(os.Stderr, "dracel: %v\n", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "dracel: reading input: %v\n", err)
		os.Exit(1)
	}
}

func evaluate(expr dracel.CompilationResult, d device) result {
	input := dracel.Device{
		Driver:                   d.Driver,
		AllowMultipleAllocations: d.AllowMultipleAllocations,
		Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	for name, a := range d.Attributes {
		input.Attributes[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{
			IntValue: a.Int, BoolValue: a.Bool, StringValue: a.String, VersionValue: a.Version,
		}
	}
	for name, q := range d.Capacity {
		value, err := resource.ParseQuantity(q)
		if err != nil {
			return result{Error: fmt.Sprintf("capacity %s: %v", name, err)}
		}
		input.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: value}
	}
	matches, _, err := expr.DeviceMatches(context.Background(), input)
	if err != nil {
		return result{Error: dracel.EnhanceRuntimeError(err).Error()}
	}
	return result{Matches: matches}
}
