import LookoutJSON

/// One write to the store.
public enum Mutation: Sendable {
    /// Adds a document; without an `id` it gets the collection's highest id plus one.
    case create(collection: String, document: JSONObject)
    /// Replaces every field of a document (its `id` stays).
    case replace(collection: String, id: Int, document: JSONObject)
    /// Applies a JSON merge patch (RFC 7396) to a document.
    case patch(collection: String, id: Int, patch: JSONObject)
    /// Removes a document.
    case delete(collection: String, id: Int)

    var collection: String {
        switch self {
        case .create(let collection, _), .replace(let collection, _, _), .patch(let collection, _, _),
            .delete(let collection, _):
            collection
        }
    }
}

/// What a write did.
public struct Commit: Sendable {
    /// The store's revision after the write; unchanged when nothing changed.
    public let revision: UInt64
    /// The keys whose values changed, ignored fields included; empty when the write
    /// changed nothing (every value was equal to the stored one).
    public let changed: [StoreKey]
    /// The document's id and its fields after the write (nil after a delete).
    public let id: Int
    public let document: JSONObject?
    /// The document's revision after the write (nil after a delete): its version for
    /// `If-Match`, taken from this write rather than from a later snapshot.
    public let documentRevision: UInt64?
}

/// RFC 7396: `null` removes a member, an object merges recursively, anything else replaces.
///
/// Built in one pass over the target and one over the patch, so its cost is linear in
/// their sizes however many members the patch removes: members of the target keep their
/// order, new ones follow in the patch's order.
enum MergePatch {
    static func apply(_ patch: JSONValue, to target: JSONValue?) -> JSONValue {
        guard case .object(let patchObject) = patch else { return patch }
        let base = target?.objectValue ?? JSONObject()
        var result = JSONObject()
        for member in base {
            switch patchObject[member.key] {
            case nil: result[member.key] = member.value
            case .null?: continue
            case let change?: result[member.key] = apply(change, to: member.value)
            }
        }
        for member in patchObject where member.value != .null && base[member.key] == nil {
            result[member.key] = apply(member.value, to: nil)
        }
        return .object(result)
    }
}
