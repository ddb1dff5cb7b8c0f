import AsyncFlow

// A placeholder until the search demo lands: it shows the two pipelines' shapes in one run.
let results = Flow<String, Never>.sequence(["s", "sw", "swi"]).map { "results for \($0)" }
for await line in results {
  print(line)
}
