import LookoutJSON
import LookoutStore

/// `PATCH` bodies: JSON merge patches (RFC 7396) applied with `Store.apply` to document
/// 1 of ``FixtureStore``'s `shops`.
///
/// - A patch object is refused exactly when it changes `id`, and only with
///   ``StoreError/invalidWrite(_:)``.
/// - The document becomes what RFC 7396 says, `id` first, both in the commit and in the
///   store; no other document changes.
/// - The commit names exactly the fields whose values changed, and the document's field
///   names when a field that is not ignored came or went; the revision moves only then.
/// - Applying the same patch again changes nothing (merge patches are idempotent).
/// - The collection's field index knows every field a document has, and forgets one that
///   no document has any more.
enum MergePatchTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        guard case .object(let patch)? = try JSONTarget.parse(input) else { return }
        let store = FixtureStore.make()
        let before = store.snapshot()
        var reads = ReadSet()
        guard let original = before.document(1, in: "shops", reads: &reads) else {
            throw PropertyViolation("the fixture has no shops/1")
        }
        let commit: Commit
        do {
            commit = try store.apply(.patch(collection: "shops", id: 1, patch: patch))
        } catch {
            let changesID = patch["id"] != nil && patch["id"]?.intValue != 1
            try PropertyViolation.require(
                changesID && { if case .invalidWrite = error { true } else { false } }(),
                "a patch is refused with \(error)")
            try PropertyViolation.require(store.snapshot().revision == before.revision, "a refused patch is stored")
            return
        }
        try PropertyViolation.require(
            patch["id"] == nil || patch["id"]?.intValue == 1, "a patch changing id is accepted")

        guard let written = commit.document else { throw PropertyViolation("a patch's commit has no document") }
        try PropertyViolation.require(
            isMerge(.object(written), of: .object(patch), into: .object(original))
                && written.members.first?.key == "id" && written.members.first?.value == .int(1),
            "the commit's document is not the merge patch's result")
        let after = store.snapshot()
        guard let stored = after.document(1, in: "shops", reads: &reads) else {
            throw PropertyViolation("a patch removed shops/1")
        }
        try PropertyViolation.require(
            isMerge(.object(stored), of: .object(patch), into: .object(original)),
            "the stored document is not the patch's result")
        for id in 2...6 {
            try PropertyViolation.require(
                after.document(id, in: "shops", reads: &reads) == before.document(id, in: "shops", reads: &reads),
                "patching shops/1 changed shops/\(id)")
        }
        try checkChanges(commit, from: original, to: stored, before: before)
        try checkFieldIndex(original, stored, after)

        let again: Commit
        do {
            again = try store.apply(.patch(collection: "shops", id: 1, patch: patch))
        } catch {
            throw PropertyViolation("the same patch applied again is refused: \(error)")
        }
        try PropertyViolation.require(
            again.changed.isEmpty && again.revision == commit.revision
                && equivalent(.object(again.document ?? [:]), .object(stored)),
            "the same patch applied again changes \(again.changed)")
    }

    private static func checkChanges(_ commit: Commit, from old: JSONObject, to new: JSONObject, before: StoreSnapshot)
        throws(PropertyViolation)
    {
        let ignored = before.options(of: "shops")?.ignored ?? []
        let (oldFields, newFields) = (dictionary(old), dictionary(new))
        var changedFields: Set<String> = []
        var reshaped = false
        for member in new where member.key != "id" {
            guard let previous = oldFields[member.key] else {
                changedFields.insert(member.key)
                if !ignored.contains(member.key) { reshaped = true }
                continue
            }
            if !equivalent(previous, member.value) { changedFields.insert(member.key) }
        }
        for member in old where member.key != "id" && newFields[member.key] == nil {
            changedFields.insert(member.key)
            if !ignored.contains(member.key) { reshaped = true }
        }
        var named: Set<String> = []
        var namesChanged = false
        for key in commit.changed {
            switch key {
            case .field("shops", 1, let name): named.insert(name)
            case .fieldNames("shops", 1): namesChanged = true
            default: throw PropertyViolation("a patch of shops/1 changes \(key)")
            }
        }
        try PropertyViolation.require(
            named == changedFields, "the commit names \(named.sorted()) changed, not \(changedFields.sorted())")
        try PropertyViolation.require(
            namesChanged == reshaped, "the commit's field names changed: \(namesChanged), expected \(reshaped)")
        let revision = changedFields.isEmpty ? before.revision : before.revision + 1
        try PropertyViolation.require(
            commit.revision == revision && commit.documentRevision != nil,
            "the commit is at revision \(commit.revision), not \(revision)")
    }

    private static func checkFieldIndex(_ old: JSONObject, _ new: JSONObject, _ after: StoreSnapshot)
        throws(PropertyViolation)
    {
        var reads = ReadSet()
        let others = (2...6).compactMap { after.document($0, in: "shops", reads: &reads) }
        for name in new.keys {
            try PropertyViolation.require(
                after.hasField(name, in: "shops"), "shops has \(excerpt(name)) but does not know it")
        }
        let newFields = dictionary(new)
        for name in old.keys where newFields[name] == nil {
            let kept = others.contains { $0[name] != nil }
            try PropertyViolation.require(
                after.hasField(name, in: "shops") == kept,
                "shops \(kept ? "forgets" : "still knows") \(excerpt(name)) after a patch removed it from shops/1")
        }
    }

    /// Whether `result` is what RFC 7396 §2 makes of `target` with `patch`; written apart
    /// from the store's merge, and in linear time.
    static func isMerge(_ result: JSONValue, of patch: JSONValue, into target: JSONValue?) -> Bool {
        guard case .object(let patchObject) = patch else { return equivalent(result, patch) }
        guard case .object(let resultObject) = result else { return false }
        let patchMembers = dictionary(patchObject)
        let targetMembers = target?.objectValue.map(dictionary) ?? [:]
        let resultMembers = dictionary(resultObject)
        var expectedCount = 0
        for (key, value) in targetMembers where patchMembers[key] == nil {
            guard let kept = resultMembers[key], equivalent(kept, value) else { return false }
            expectedCount += 1
        }
        for (key, value) in patchMembers where value != .null {
            guard let merged = resultMembers[key], isMerge(merged, of: value, into: targetMembers[key]) else {
                return false
            }
            expectedCount += 1
        }
        return resultMembers.count == expectedCount
    }
}
