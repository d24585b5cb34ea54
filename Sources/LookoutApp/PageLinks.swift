import LookoutFeeds
import LookoutHTTP

/// The `Link` header of a paged list (RFC 8288): targets keep the request's path and
/// its other parameters as sent, and append their own paging parameters.
///
/// The kept parameters are the client's text, so any byte that could end the target or
/// the field (`>`, `"`, `,`, spaces, controls, non-ASCII) is percent-encoded: a crafted
/// query cannot add a relation or a parameter to the header. Encoding them changes no
/// value, since parameters are percent-decoded when read.
struct PageLinks {
    /// The longest `Link` header answered: the server has a few KiB per connection for an
    /// answer's header fields (lk_mhd.h), and each link repeats the query.
    static let maxHeaderBytes = 1024

    let path: String
    /// The request's parameters other than the paging ones, encoded, joined by `&`.
    let keeping: String

    init(path: String, keeping: String) {
        self.path = path
        self.keeping = Self.escaped(keeping)
    }

    /// `text` with every byte that is not allowed as is in a URI query (RFC 3986 §3.4),
    /// or that is a separator in a `Link` field, percent-encoded. `%` stays: the text is
    /// already encoded.
    static func escaped(_ text: String) -> String {
        PercentEncoding.encode(text, keeping: isKept)
    }

    /// Unreserved characters, `%`, and the sub-delimiters and query characters that
    /// cannot end a `Link` target or value: not `,` `;` `"` `<` `>` or anything else.
    private static func isKept(_ byte: UInt8) -> Bool {
        PercentEncoding.isUnreserved(byte) || "%!$&'()*+=:@/?".utf8.contains(byte)
    }

    /// `first`, `prev`, `next` and `last` for a page; `next` for a cursor page; nil for
    /// an unpaged list or a cursor page with nothing after it.
    func header(for window: ListResult.Window) -> String? {
        switch window {
        case .all:
            return nil
        case .page(let page, let lastPage):
            var links = [link("page=1&per_page=\(page.size)", "first")]
            if page.number > 1 {
                links.append(link("page=\(min(page.number - 1, lastPage))&per_page=\(page.size)", "prev"))
            }
            if page.hasNextPage {
                links.append(link("page=\(page.number + 1)&per_page=\(page.size)", "next"))
            }
            links.append(link("page=\(lastPage)&per_page=\(page.size)", "last"))
            return links.joined(separator: ", ")
        case .cursor(let next, let limit):
            return next.map { link("limit=\(limit)&after=\($0.encoded)", "next") }
        }
    }

    private func link(_ paging: String, _ relation: String) -> String {
        "<\(path)?\(keeping.isEmpty ? "" : keeping + "&")\(paging)>; rel=\"\(relation)\""
    }
}
