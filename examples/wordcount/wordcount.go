package main

import (
	"math/rand/v2"
	"strings"
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

// counter simulates the topology spout -> split -> count inside one process.
// It is not safe for concurrent use; the worker's tick loop owns it.
type counter struct {
	rng    *rand.Rand
	counts map[string]int64
	tuples int64 // sentences emitted, in total
	words  int64 // words counted, in total
}

func newCounter(rng *rand.Rand) *counter {
	return &counter{rng: rng, counts: make(map[string]int64)}
}

// tick lets each of spouts executors emit 1 to maxSentencesPerTick random
// sentences, splits them and counts the words. It returns what this tick did.
func (c *counter) tick(spouts int) (tuples, words int) {
	for range spouts {
		for range 1 + c.rng.IntN(maxSentencesPerTick) {
			tuples++
			for _, w := range strings.Fields(sentences[c.rng.IntN(len(sentences))]) {
				c.counts[w]++
				words++
			}
		}
	}
	c.tuples += int64(tuples)
	c.words += int64(words)
	return tuples, words
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
