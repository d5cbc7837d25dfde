-- A pandoc custom writer, run after --citeproc: every bibliography entry (Div `ref-KEY`) and
-- every in-text citation (the Cite inside Div `cite-KEY`) as plain text, HTML and Markdown, in
-- one JSON document, so one pandoc run per style yields all three forms.
--
-- All pieces are written in one document per format, each followed by a paragraph holding the
-- random `split-token` (metadata); the caller splits the three outputs on that token and takes
-- the paragraph markup off. Entries reach the writers as citeproc made them: reading their
-- inlines in Lua (walks, blocks_to_inlines, new Plain blocks) copies every entry into Lua and
-- back, which cost a fifth of each run.

local OPTS = pandoc.WriterOptions { wrap_text = 'wrap-none' }
-- Markdown wants the words, not citeproc's layout spans (`csl-left-margin`), so the writer
-- leaves spans out; `-smart` keeps citeproc's curly quotes instead of writing ASCII ones.
local MARKDOWN = 'markdown-smart-bracketed_spans-native_spans-raw_html'

-- The rendered citation (small); note styles wrap it in a footnote, whose content is the note.
local function citation_blocks(blocks)
  local found = pandoc.Blocks {}
  blocks:walk { Cite = function(cite)
    local content = cite.content
    if #content == 1 and content[1].t == 'Note' then
      found = content[1].content
    else
      found = pandoc.Blocks { pandoc.Plain(content) }
    end
  end }
  return found
end

-- An entry of a numbered style starts with its label in a `csl-left-margin` span; Markdown
-- escapes a leading "1." (which would start a list) only when it is not inside a span.
local function label_unwrapped(blocks)
  local first = blocks[1]
  if first and first.t == 'Para' and first.content[1] and first.content[1].t == 'Span' then
    local inlines = first.content:clone()
    local label = inlines:remove(1)
    local unwrapped = pandoc.Blocks { pandoc.Para(label.content .. inlines) }
    for n = 2, #blocks do
      unwrapped:insert(blocks[n])
    end
    return unwrapped
  end
  return blocks
end

function Writer(doc, _)
  local meta = doc.meta
  local token = pandoc.Plain { pandoc.Str(pandoc.utils.stringify(meta['split-token'])) }
  local labelled = meta['numbered'] == true
  local pieces, styled, flat = {}, pandoc.Blocks {}, pandoc.Blocks {}
  local function add(kind, key, blocks, words)
    pieces[#pieces + 1] = { kind = kind, key = key }
    styled:extend(blocks)
    styled:insert(token)
    flat:extend(words)
    flat:insert(token)
  end
  -- The document is the citing Divs, then the `refs` Div holding one Div per entry.
  local function visit(divs)
    for _, div in ipairs(divs) do
      if div.t == 'Div' then
        local entry = div.identifier:match('^ref%-(.+)$')
        local cited = div.identifier:match('^cite%-(.+)$')
        if entry then
          add('entry', entry, div.content, labelled and label_unwrapped(div.content) or div.content)
        elseif cited then
          local blocks = citation_blocks(div.content)
          add('citation', cited, blocks, blocks)
        else
          visit(div.content)
        end
      end
    end
  end
  visit(doc.blocks)
  return pandoc.json.encode {
    pieces = pieces,
    text = pandoc.write(pandoc.Pandoc(flat), 'plain', OPTS),
    html = pandoc.write(pandoc.Pandoc(styled), 'html', OPTS),
    markdown = pandoc.write(pandoc.Pandoc(flat), MARKDOWN, OPTS),
  }
end
