import LookoutAuth
import LookoutFeeds
import LookoutStore

/// Who is reading: decided from the request's `Authorization` header at each render, so
/// a held long-poll whose token expires or is revoked while it waits is refused (401)
/// when it would be answered.
///
/// - no header: the public fields only;
/// - a token that verifies, of any role: every field;
/// - a header whose token does not verify (expired, revoked, forged, not Bearer): on a
///   collection declared `"public": true` the same as no header (the seed app sends its
///   expired token with every read); on any other, 401 with the token's error.
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

    /// The scope of `context`'s read of a collection declared with `options`; a
    /// collection public as a whole needs no token check at all.
    func scope(of context: RequestContext, for options: DocumentCollection.Options) throws(AuthError) -> ReadScope {
        if options.publicFields == .all { return .everything }
        return try reader(of: context).scope(for: options)
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

    /// What this reader may see of a collection declared with `options`.
    /// - Throws: the token's error, for a refused token on a collection that is not
    ///   public as a whole.
    func scope(for options: DocumentCollection.Options) throws(AuthError) -> ReadScope {
        if options.publicFields == .all { return .everything }
        switch self {
        case .anonymous: return .publicFields
        case .holder: return .everything
        case .refused(let error): throw error
        }
    }
}

extension ReadScope {
    /// Headers for shared caches on a view read in this scope of a collection declared
    /// with `options`; none when it is public as a whole (the view is the same for all).
    func cacheHeaders(for options: DocumentCollection.Options) -> [(String, String)] {
        options.publicFields == .all ? [] : cacheHeaders
    }

    /// Headers for shared caches on a view that depends on who reads it: it varies by
    /// `Authorization`, and one rendered for a token holder is for that holder alone.
    var cacheHeaders: [(String, String)] {
        self == .everything ? [("Cache-Control", "private"), ("Vary", "Authorization")] : [("Vary", "Authorization")]
    }
}
