package main

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nimbusha/nimbus/worker"
)

// sentences are what the simulated spouts emit (Storm's RandomSentenceSpout).
var sentences = [...]string{
	"the cow jumped over the moon",
	"an apple a day keeps the doctor away",
	"four score and seven years ago",
	"snow white and the seven dwarfs",
	"i am at two with nature",
}

// maxSentencesPerTick bounds what one spout executor emits per tick.
const maxSentencesPerTick = 10

// stream is Storm's default stream, the only one the example uses.
const stream = "default"

// streams are the counters of the three components the word count runs
// through: the spout's sentences, the split bolt (which executes
// sentences and emits words) and the count bolt (which executes words).
type streams struct {
	// spout and split are what they emit; splitIn and countIn what the
	// bolts receive: split from the spout, count from split (Storm's input
	// stats, per source). count emits nothing.
	spout, split, splitIn, countIn *worker.Stream
}

// newStreams registers the counters with w. The spout is the worker's
// first spout component, the split bolt its first other component whose
// name has "split", the count bolt its first remaining one; a worker
// without one of them counts under the topology.yaml name.
func newStreams(w *worker.Worker) *streams {
	spout, split, count := "sentence", "split", "count"
	seen := map[string]bool{}
	for _, e := range w.Executors() {
		if seen[e.Component] {
			continue
		}
		seen[e.Component] = true
		switch {
		case isSpout(e.Component):
			spout = e.Component
		case strings.Contains(strings.ToLower(e.Component), "split") && split == "split":
			split = e.Component
		case count == "count":
			count = e.Component
		}
	}
	return &streams{
		spout:   w.Spout(spout).Stream(stream),
		split:   w.Bolt(split).Stream(stream),
		splitIn: w.Bolt(split).Input(spout, stream),
		countIn: w.Bolt(count).Input(split, stream),
	}
}

// isSpout judges a component by its name: one containing "spout" or
// "sentence" (case-insensitive) is a spout. The example has no topology
// definition to ask, so the name is all it has.
func isSpout(component string) bool {
	name := strings.ToLower(component)
	return strings.Contains(name, "spout") || strings.Contains(name, "sentence")
}

// counter simulates the topology spout -> split -> count inside one process.
// It is not safe for concurrent use; the worker's tick loop owns it.
type counter struct {
	rng    *rand.Rand
	m      *streams // nil: count nothing for the worker protocol
	counts map[string]int64
	tuples int64 // sentences emitted, in total
	words  int64 // words counted, in total
}

func newCounter(rng *rand.Rand, m *streams) *counter {
	return &counter{rng: rng, m: m, counts: make(map[string]int64)}
}

// tick lets each of spouts executors emit 1 to maxSentencesPerTick random
// sentences, splits them and counts the words, counting each step in
// Storm's terms. It returns what this tick did.
func (c *counter) tick(spouts int) (tuples, words int) {
	for range spouts {
		for range 1 + c.rng.IntN(maxSentencesPerTick) {
			tuples++
			words += c.one(sentences[c.rng.IntN(len(sentences))])
		}
	}
	c.tuples += int64(tuples)
	c.words += int64(words)
	return tuples, words
}

// one runs one sentence through the topology and returns its words.
func (c *counter) one(sentence string) int {
	emitted := time.Now()
	if c.m != nil {
		c.m.spout.Emit(1)
		c.m.spout.Transfer(1)
	}
	received := time.Now()
	fields := strings.Fields(sentence)
	if c.m != nil {
		c.m.splitIn.Execute(time.Since(received))
		c.m.split.Emit(uint64(len(fields)))
		c.m.split.Transfer(uint64(len(fields)))
	}
	for _, w := range fields {
		start := time.Now()
		c.counts[w]++
		if c.m != nil {
			c.m.countIn.Execute(time.Since(start))
			c.m.countIn.Ack(time.Since(start))
		}
	}
	if c.m != nil {
		c.m.splitIn.Ack(time.Since(received))
		c.m.spout.Ack(time.Since(emitted)) // every word counted: the tree is complete
	}
	return len(fields)
}

// top returns the most counted word (the first in sorted order on a tie) and its count.
func (c *counter) top() (word string, count int64) {
	for w, n := range c.counts {
		if n > count || (n == count && w < word) {
			word, count = w, n
		}
	}
	return word, count
}
