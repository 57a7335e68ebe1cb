package assign

import (
	"slices"
)

// Executor is a range of tasks of one component (Storm's [start-task end-task]).
type Executor struct {
	Component string
	TaskStart int32
	TaskEnd   int32
}

// Slot is one worker port on one supervisor.
type Slot struct {
	SupervisorID string
	Port         int32
}

// Supervisor is a live supervisor and its slot ports.
type Supervisor struct {
	ID    string
	Ports []int32
}

// Topology is a topology to schedule. Its executors are placed in the order
// of Executors, which is ordered by first task as the function Executors
// returns it (Schedule accepts any order, a little more slowly).
type Topology struct {
	ID         string
	NumWorkers int
	Executors  []Executor
}

// Assignment places each executor of one topology in a slot.
type Assignment map[Executor]Slot

// Executors lists a topology's executors from its component parallelism:
// components sorted by id, one executor per unit of parallelism, one task
// per executor, task ids numbered from 1 contiguously in that order. A
// component with parallelism below 1 has no executors.
func Executors(parallelism map[string]int32) []Executor {
	ids := make([]string, 0, len(parallelism))
	n := 0
	for id, p := range parallelism {
		ids = append(ids, id)
		if p > 0 {
			n += int(p)
		}
	}
	slices.Sort(ids)
	execs := make([]Executor, 0, n)
	task := int32(1)
	for _, id := range ids {
		for range parallelism[id] {
			execs = append(execs, Executor{Component: id, TaskStart: task, TaskEnd: task})
			task++
		}
	}
	return execs
}
