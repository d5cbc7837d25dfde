-- A pandoc custom writer, run after --citeproc: every bibliography entry (Div `ref-KEY`) and
-- every in-text citation (the Cite inside Div `cite-KEY`) as plain text, HTML and Markdown, in
-- one JSON document, so one pandoc run per style yields all three forms.
--
-- Writing each piece separately costs thousands of writer calls per job, so all pieces are
-- written in one document per format, each followed by a paragraph holding the random
-- `split-token` (metadata); the caller splits the three outputs on that token.

local OPTS = pandoc.WriterOptions { wrap_text = 'wrap-none' }

-- Plain text and Markdown want the words, not citeproc's layout spans (`csl-left-margin`).
local function without_spans(inlines)
  return inlines:walk { Span = function(span) return span.content end }
end

-- The rendered citation; note styles wrap it in a footnote, whose text is the note form.
local function citation_inlines(blocks)
  local found = pandoc.Inlines {}
  blocks:walk { Cite = function(cite)
    found = cite.content
    if #found == 1 and found[1].t == 'Note' then
      found = pandoc.utils.blocks_to_inlines(found[1].content)
    end
  end }
  return found
end

function Writer(doc, _)
  local token = pandoc.Plain { pandoc.Str(pandoc.utils.stringify(doc.meta['split-token'])) }
  local pieces, styled, flat = {}, {}, {}
  local function add(kind, key, inlines)
    pieces[#pieces + 1] = { kind = kind, key = key }
    styled[#styled + 1] = pandoc.Plain(inlines)
    styled[#styled + 1] = token
    flat[#flat + 1] = pandoc.Plain(without_spans(inlines))
    flat[#flat + 1] = token
  end
  doc.blocks:walk { Div = function(div)
    local key = div.identifier:match('^ref%-(.+)$')
    if key then
      add('entry', key, pandoc.utils.blocks_to_inlines(div.content, { pandoc.Space() }))
    end
    local cited = div.identifier:match('^cite%-(.+)$')
    if cited then
      add('citation', cited, citation_inlines(div.content))
    end
  end }
  return pandoc.json.encode {
    pieces = pieces,
    text = pandoc.write(pandoc.Pandoc(flat), 'plain', OPTS),
    html = pandoc.write(pandoc.Pandoc(styled), 'html', OPTS),
    -- `-smart` keeps citeproc's curly quotes instead of writing them back as ASCII.
    markdown = pandoc.write(pandoc.Pandoc(flat), 'markdown-smart', OPTS),
  }
end
