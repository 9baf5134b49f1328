// A minimal XML well-formedness checker for the tests, so they can tell that the SVG files the CLI
// writes will parse in a browser without pulling in an XML library. It checks what a hand-written
// writer can get wrong: tags balanced and properly nested, attributes quoted and not repeated,
// entities valid, no stray '<' or '&', a single root element. It does not validate against a DTD.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace normnet::test {

class XmlChecker {
public:
    explicit XmlChecker(std::string_view text) : s_(text) {}

    /// Empty if the document is well-formed, else what is wrong and at which byte offset.
    std::string problem() {
        try {
            document();
            return {};
        } catch (const Bad& bad) {
            return "at offset " + std::to_string(bad.offset) + ": " + bad.what;
        }
    }

    /// Name and attributes of the root element (valid after problem() returned empty).
    const std::string& root_name() const { return root_name_; }
    std::string root_attribute(const std::string& name) const {
        for (const auto& [key, value] : root_attributes_)
            if (key == name) return value;
        return {};
    }

private:
    struct Bad {
        size_t offset;
        std::string what;
    };

    std::string_view s_;
    size_t pos_ = 0;
    std::vector<std::string> open_;  // element names from the root down to the current one
    bool root_seen_ = false;
    std::string root_name_;
    std::vector<std::pair<std::string, std::string>> root_attributes_;

    [[noreturn]] void bad(const std::string& what) const { throw Bad{pos_, what}; }
    bool at_end() const { return pos_ >= s_.size(); }
    bool starts(std::string_view prefix) const { return s_.substr(pos_, prefix.size()) == prefix; }
    static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
    void skip_space() {
        while (!at_end() && space(s_[pos_])) ++pos_;
    }
    void expect(char c) {
        if (at_end() || s_[pos_] != c) bad(std::string("expected '") + c + "'");
        ++pos_;
    }
    // Moves past `terminator`; the skipped text is returned.
    std::string_view until(std::string_view terminator, const char* what) {
        const size_t end = s_.find(terminator, pos_);
        if (end == std::string_view::npos) bad(std::string("unterminated ") + what);
        std::string_view body = s_.substr(pos_, end - pos_);
        pos_ = end + terminator.size();
        return body;
    }

    void document() {
        if (starts("<?xml")) until("?>", "XML declaration");
        while (!at_end()) {
            if (s_[pos_] == '<') markup();
            else text();
        }
        if (!open_.empty()) bad("element <" + open_.back() + "> is never closed");
        if (!root_seen_) bad("no root element");
    }

    void markup() {
        if (starts("<!--")) {
            pos_ += 4;
            if (until("-->", "comment").find("--") != std::string_view::npos) bad("'--' inside a comment");
        } else if (starts("<![CDATA[")) {
            if (open_.empty()) bad("CDATA outside the root element");
            pos_ += 9;
            until("]]>", "CDATA section");
        } else if (starts("<?")) {
            pos_ += 2;
            until("?>", "processing instruction");
        } else if (starts("</")) {
            close_tag();
        } else {
            open_tag();
        }
    }

    // Character data: only whitespace outside the root; '&' must start a valid entity.
    void text() {
        const size_t end = std::min(s_.find('<', pos_), s_.size());
        for (; pos_ < end; ++pos_) {
            if (open_.empty() && !space(s_[pos_])) bad("text outside the root element");
            if (s_[pos_] == '&') entity();
        }
    }

    // At '&': one of the five predefined entities or a character reference, ending in ';'.
    void entity() {
        const size_t semi = s_.find(';', pos_);
        if (semi == std::string_view::npos || semi - pos_ > 12) bad("'&' that does not start an entity");
        const std::string_view name = s_.substr(pos_ + 1, semi - pos_ - 1);
        const bool named = name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos";
        if (!named && !char_reference(name)) bad("unknown entity '&" + std::string(name) + ";'");
        pos_ = semi;  // the caller's loop steps past the ';'
    }

    static bool char_reference(std::string_view name) {
        if (name.size() < 2 || name[0] != '#') return false;
        const bool hex = name[1] == 'x';
        std::string_view digits = name.substr(hex ? 2 : 1);
        if (digits.empty()) return false;
        unsigned long value = 0;
        for (char c : digits) {
            const auto u = static_cast<unsigned char>(c);
            if (!(hex ? std::isxdigit(u) : std::isdigit(u))) return false;
            value = value * (hex ? 16 : 10) + static_cast<unsigned long>(std::isdigit(u) ? c - '0' : std::tolower(u) - 'a' + 10);
            if (value > 0x10FFFF) return false;
        }
        return value != 0;
    }

    std::string name() {
        const size_t start = pos_;
        auto name_char = [](char c, bool first) {
            const auto u = static_cast<unsigned char>(c);
            return std::isalpha(u) || c == '_' || c == ':' || u >= 0x80 ||
                   (!first && (std::isdigit(u) || c == '-' || c == '.'));
        };
        while (!at_end() && name_char(s_[pos_], pos_ == start)) ++pos_;
        if (pos_ == start) bad("expected a name");
        return std::string(s_.substr(start, pos_ - start));
    }

    void open_tag() {
        ++pos_;  // '<'
        if (open_.empty() && root_seen_) bad("a second root element");
        const std::string tag = name();
        std::vector<std::pair<std::string, std::string>> attributes;
        std::set<std::string> seen;
        for (;;) {
            const size_t before = pos_;
            skip_space();
            if (starts("/>") || starts(">")) break;
            if (pos_ == before) bad("attributes of <" + tag + "> must be separated by whitespace");
            const std::string key = name();
            if (!seen.insert(key).second) bad("attribute '" + key + "' repeated in <" + tag + ">");
            skip_space();
            expect('=');
            skip_space();
            attributes.emplace_back(key, attribute_value());
        }
        if (open_.empty()) root_seen_ = true, root_name_ = tag, root_attributes_ = attributes;
        if (starts("/>")) {
            pos_ += 2;
        } else {
            ++pos_;
            open_.push_back(tag);
        }
    }

    std::string attribute_value() {
        if (at_end() || (s_[pos_] != '"' && s_[pos_] != '\'')) bad("attribute value without quotes");
        const char quote = s_[pos_++];
        const size_t start = pos_;
        for (; !at_end() && s_[pos_] != quote; ++pos_) {
            if (s_[pos_] == '<') bad("'<' inside an attribute value");
            if (s_[pos_] == '&') entity();
        }
        if (at_end()) bad("unterminated attribute value");
        return std::string(s_.substr(start, pos_++ - start));
    }

    void close_tag() {
        pos_ += 2;
        const std::string tag = name();
        skip_space();
        expect('>');
        if (open_.empty()) bad("</" + tag + "> closes nothing");
        if (open_.back() != tag) bad("</" + tag + "> closes <" + open_.back() + ">");
        open_.pop_back();
    }
};

/// Empty if `text` is well-formed XML whose single root is <svg> with the SVG namespace, so a
/// browser will render it; else what is wrong.
inline std::string svg_problem(std::string_view text) {
    XmlChecker checker(text);
    std::string problem = checker.problem();
    if (!problem.empty()) return problem;
    if (checker.root_name() != "svg") return "root element is <" + checker.root_name() + ">, not <svg>";
    if (checker.root_attribute("xmlns") != "http://www.w3.org/2000/svg")
        return "<svg> lacks xmlns=\"http://www.w3.org/2000/svg\"";
    return {};
}

}  // namespace normnet::test
