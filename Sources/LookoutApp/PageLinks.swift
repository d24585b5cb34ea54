import LookoutFeeds

/// The `Link` header of a paged list (RFC 8288): targets keep the request's path and
/// its other parameters as sent, and append their own paging parameters.
struct PageLinks {
    let path: String
    /// The request's parameters other than the paging ones, encoded, joined by `&`.
    let keeping: String

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
