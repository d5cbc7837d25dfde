"""CSL-JSON as the DOI resolver serves it by content negotiation.

Crossref's transform (recorded in shared/data/crossref/other/cr_cn_citeproc_json__1.json) is the
work record with `title`, `container-title` and `container-title-short` flattened to strings and
`URL` pointing at dx.doi.org. DataCite's records (shared/data/crossref/datacite) are DataCite REST
API documents, so they are converted here to the CSL-JSON that data.crosscite.org serves.
"""

from typing import Any

_FLATTENED = ("title", "container-title", "container-title-short", "short-title")


def crossref_work_to_csl(work: dict[str, Any]) -> dict[str, Any]:
    """The CSL-JSON Crossref serves for a work (Accept: application/vnd.citationstyles.csl+json)."""
    csl = {key: value for key, value in work.items() if key != "score"}
    for key in _FLATTENED:
        value = csl.get(key)
        if isinstance(value, list):
            if value:
                csl[key] = str(value[0])
            elif key != "short-title":
                del csl[key]
    csl["URL"] = f"http://dx.doi.org/{work['DOI']}"
    return csl


def datacite_to_csl(document: dict[str, Any]) -> dict[str, Any]:
    """CSL-JSON for one DataCite REST API document (`{"data": {"attributes": {...}}}`)."""
    attributes = document["data"]["attributes"] if "data" in document else document
    doi = attributes["doi"]
    csl: dict[str, Any] = {
        "type": attributes.get("types", {}).get("citeproc") or "article",
        "id": f"https://doi.org/{doi}",
        "DOI": doi,
        "author": [_datacite_name(creator) for creator in attributes.get("creators", [])],
        "title": next((t["title"] for t in attributes.get("titles", []) if t.get("title")), None),
        "publisher": attributes.get("publisher"),
        "URL": attributes.get("url"),
    }
    if isinstance(csl["publisher"], dict):  # DataCite 4.5 may give the publisher as an object
        csl["publisher"] = csl["publisher"].get("name")
    if year := attributes.get("publicationYear"):
        csl["issued"] = {"date-parts": [[int(year)]]}
    container = attributes.get("container") or {}
    if container.get("title"):
        csl["container-title"] = container["title"]
    for csl_key, container_key in (("volume", "volume"), ("issue", "issue")):
        if container.get(container_key):
            csl[csl_key] = str(container[container_key])
    if container.get("firstPage"):
        last = container.get("lastPage")
        csl["page"] = f"{container['firstPage']}-{last}" if last else str(container["firstPage"])
    if attributes.get("version"):
        csl["version"] = str(attributes["version"])
    abstract = next(
        (
            d["description"]
            for d in attributes.get("descriptions", [])
            if d.get("descriptionType") == "Abstract" and d.get("description")
        ),
        None,
    )
    if abstract:
        csl["abstract"] = abstract
    return {key: value for key, value in csl.items() if value not in (None, [], "")}


def _datacite_name(creator: dict[str, Any]) -> dict[str, str]:
    if creator.get("familyName"):
        name = {"family": creator["familyName"]}
        if creator.get("givenName"):
            name["given"] = creator["givenName"]
        return name
    return {"literal": creator.get("name", "")}
