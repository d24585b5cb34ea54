import LookoutFeeds

/// What one read may see of every collection it touches (the one in its path and each one
/// it reaches through `expand`, or each one a watch reads), and so whether its answer
/// depends on who asks.
///
/// Render caches share a rendering only among requests of the same grant (``cacheKey``),
/// and an answer carries the grant's ``cacheHeaders`` for shared caches downstream.
enum ReadGrant: Sendable, Hashable {
    /// Every collection the read touches is `"public": true`: the same answer for
    /// everyone, with or without a token, and no token is checked.
    case everyone
    /// A reader without a token (or whose token counts as none): each collection's public
    /// fields.
    case publicFields
    /// A reader with a valid token, of any role: every field.
    case tokenHolder

    /// What the read sees of each collection it touches.
    var scope: ReadScope {
        self == .publicFields ? .publicFields : .everything
    }

    /// Headers for shared caches: none when the answer is the same for everyone; else it
    /// varies by `Authorization`, and a token holder's is for that holder alone.
    var cacheHeaders: [(String, String)] {
        switch self {
        case .everyone: []
        case .publicFields: [("Vary", "Authorization")]
        case .tokenHolder: [("Cache-Control", "private"), ("Vary", "Authorization")]
        }
    }

    /// A prefix for a render cache key: requests of different grants never share a
    /// rendering, even where the bodies would agree (their headers do not).
    var cacheKey: String {
        switch self {
        case .everyone: ""
        case .publicFields: "public "
        case .tokenHolder: "token "
        }
    }
}
