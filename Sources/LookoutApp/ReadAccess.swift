import LookoutAuth
import LookoutFeeds
import LookoutStore

/// Who is reading, and so what a read may see: decided from the request's `Authorization`
/// header at each render, so a held long-poll whose token expires or is revoked while it
/// waits is refused (401) when it would be answered.
///
/// A read sees, of every collection it touches (the one in its path and each one it
/// reaches through `expand`), what that collection allows its reader:
/// - no header: the public fields;
/// - a token that verifies, of any role: every field;
/// - a header whose token does not verify (expired, revoked, forged, not Bearer): when the
///   path names a collection declared `"public": true`, the same as no header, expansions
///   included (the seed app sends its expired token with every read); on any other, 401
///   with the token's error.
///
/// Only when every collection a read touches is `"public": true` is the token not
/// checked: the answer is then the same for everyone (``ReadGrant/everyone``).
struct ReadAccess: Sendable {
    let tokens: TokenService

    /// Who sent `context`'s request; the token, if any, is verified now.
    func reader(of context: RequestContext) -> Reader {
        guard let header = context.request.headers["Authorization"] else { return .anonymous }
        do {
            _ = try tokens.verify(try BearerToken.parse(header))
            return .holder
        } catch {
            return .refused(error)
        }
    }

    /// What `context`'s read of a collection declared with `options` may see, of it and
    /// of each collection its `expand=` parameter reaches in `snapshot`.
    /// - Throws: the token's error, for a refused token when `options` is not public as
    ///   a whole.
    func grant(of context: RequestContext, reading options: DocumentCollection.Options, in snapshot: StoreSnapshot)
        throws(AuthError) -> ReadGrant
    {
        // A reference to a collection that does not exist reads as one with nothing
        // public, as Projection reads it.
        let expanded = Projection.expandedCollections(context.query["expand"], of: options).map {
            snapshot.options(of: $0) ?? DocumentCollection.Options()
        }
        if options.publicFields == .all, expanded.allSatisfy({ $0.publicFields == .all }) { return .everyone }
        return try reader(of: context).grant(reading: options)
    }
}

/// The reader of one request, as ``ReadAccess`` found it.
enum Reader: Sendable {
    /// No `Authorization` header.
    case anonymous
    /// A token that verified, of any role.
    case holder
    /// A token, or a header, that did not verify, and why.
    case refused(AuthError)

    /// What this reader may see in a read whose answer depends on the token, of a
    /// collection declared with `options` (the one named in the path, or a watched one).
    /// - Throws: the token's error, for a refused token on a collection that is not
    ///   public as a whole.
    func grant(reading options: DocumentCollection.Options) throws(AuthError) -> ReadGrant {
        switch self {
        case .anonymous: return .publicFields
        case .holder: return .tokenHolder
        case .refused(let error):
            guard options.publicFields == .all else { throw error }
            return .publicFields
        }
    }
}
