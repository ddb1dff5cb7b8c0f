// The context that the doc-comment examples take for granted; compiled by .ci/doc-examples.py before every
// example. Keep it small: each name here is one a reader of the examples is asked to imagine.
import AsyncFlow
import AsyncFlowTesting
