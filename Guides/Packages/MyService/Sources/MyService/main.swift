let lookup = ProfileLookup { id in "profile \(id)" }
print(await lookup.profile("42") ?? "cancelled")
