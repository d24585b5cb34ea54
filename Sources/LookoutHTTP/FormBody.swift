/// The parameters of an `application/x-www-form-urlencoded` body, each name given once,
/// decoded as ``QueryParameters`` decodes a query.
///
/// A parameter given twice is refused rather than one of its values picked (RFC 6749
/// §3.2: "Request and response parameters MUST NOT be included more than once").
public struct FormBody: Sendable {
    /// Why a body is not a form of distinct parameters.
    public enum Error: Swift.Error, Equatable, Sendable {
        /// `name` (decoded) is given more than once.
        case repeatedName(String)
    }

    /// Decoded values by decoded name.
    public let values: [String: String]

    /// Parses `body`; bytes that are not UTF-8 become U+FFFD.
    /// - Throws: ``Error/repeatedName(_:)`` for the first name given a second time.
    public init(parsing body: [UInt8]) throws(Error) {
        let text = String(decoding: body, as: UTF8.self)
        var values: [String: String] = [:]
        for (name, value) in QueryParameters(text[...]).pairs {
            guard values.updateValue(value, forKey: name) == nil else { throw .repeatedName(name) }
        }
        self.values = values
    }
}
