/// A parser that reads client bytes, with the properties its fuzzing checks.
///
/// Each case is one libFuzzer target (`LOOKOUT_FUZZ_TARGET=<rawValue>` for the
/// executable in `Fuzz/`), and its corpus is `Tests/FuzzCorpus/<rawValue>/`.
///
/// ```swift
/// try FuzzTarget.json.check(Array(#"{"a":[1,2.5,"x"]}"#.utf8))
/// ```
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `JSONParser` and `JSONWriter`: request bodies.
    case json
    /// `QueryParameters`, `ListQuery` and `Projection`: a list's or a document's query.
    case query
    /// `ListCursor`: `?after=` of cursor paging.
    case cursor
    /// `EntityTag`: `If-None-Match`, `If-Match` and `?since=`.
    case entityTag = "entity-tag"
    /// `TokenService.verify`: `Authorization: Bearer` JWTs.
    case token
    /// `FormBody`: OAuth form bodies.
    case form
    /// `Store.apply` with `.patch`: `PATCH` bodies (JSON merge patch).
    case mergePatch = "merge-patch"
    /// `DataFile(json:)`: `--data-file` and `lookout import`.
    case dataFile = "data-file"

    /// The largest input a client can make this parser read, which a ``RepeatTemplate``
    /// is expanded to: a body is at most 1 MiB by default; a request line and headers are
    /// at most 16 KiB by default, and 64 KiB allows for an operator raising that.
    public var amplifiedSize: Int {
        switch self {
        case .json, .form, .mergePatch, .dataFile: 1024 * 1024
        case .query, .cursor, .entityTag, .token: 64 * 1024
        }
    }

    /// Checks this target's properties on `input`, and, when it is a ``RepeatTemplate``,
    /// on its expansion to `size` bytes (``amplifiedSize`` unless given).
    /// - Throws: ``PropertyViolation`` describing the first property that does not hold.
    public func check(_ input: [UInt8], amplifyingTo size: Int? = nil) throws(PropertyViolation) {
        try checkOnce(input)
        if let template = RepeatTemplate(input) {
            try checkOnce(template.expanded(fillingUpTo: size ?? amplifiedSize))
        }
    }

    private func checkOnce(_ input: [UInt8]) throws(PropertyViolation) {
        switch self {
        case .json: try JSONTarget.check(input)
        case .query: try QueryTarget.check(input)
        case .cursor: try CursorTarget.check(input)
        case .entityTag: try EntityTagTarget.check(input)
        case .token: try TokenTarget.check(input)
        case .form: try FormTarget.check(input)
        case .mergePatch: try MergePatchTarget.check(input)
        case .dataFile: try DataFileTarget.check(input)
        }
    }
}
