// Tests of the SVG chart writer used by `normnet compare`, and of the XML checker the tests use to
// make sure every chart parses: well-formed output for every edge case, escaping, ticks, legend,
// and whole-number ticks for counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <regex>

#include "normnet/error.hpp"
#include "svg_chart.hpp"
#include "xml_check.hpp"

using normnet::cli::ChartOptions;
using normnet::cli::line_chart_svg;
using normnet::cli::Series;
using normnet::test::svg_problem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// Every chart must parse, and must not print a non-finite number anywhere.
void require_clean_svg(const std::string& svg) {
    INFO(svg);
    REQUIRE(svg_problem(svg) == "");
    REQUIRE(lower(svg).find("nan") == std::string::npos);
    REQUIRE(lower(svg).find("inf") == std::string::npos);
}

bool has_text(const std::string& svg, const std::string& content) {
    return svg.find(">" + content + "</text>") != std::string::npos;
}

// <line>s inside the error-bar groups: three per bar (the bar and two caps).
size_t error_bar_lines(const std::string& svg) {
    size_t count = 0;
    for (size_t at = svg.find("class=\"error-bars\""); at != std::string::npos;
         at = svg.find("class=\"error-bars\"", at + 1)) {
        const std::string group = svg.substr(at, svg.find("</g>", at) - at);
        for (size_t l = group.find("<line"); l != std::string::npos; l = group.find("<line", l + 1)) ++count;
    }
    return count;
}

std::vector<Series> norm_series() {
    const std::vector<double> batch = {4, 16, 64, 256};
    return {{"LayerNorm", batch, {0.981, 0.980, 0.978, 0.975}, {0.001, 0.0012, 0.001, 0.002}},
            {"BatchNorm", batch, {0.962, 0.979, 0.982, 0.980}, {0.004, 0.002, 0.001, 0.001}},
            {"RMSNorm", batch, {0.980, 0.979, 0.977, 0.974}, {0.001, 0.001, 0.0015, 0.002}},
            {"none", batch, {0.975, 0.976, 0.971, 0.962}, {0.002, 0.002, 0.002, 0.003}}};
}

ChartOptions accuracy_options() {
    return {.title = "Test accuracy vs batch size", .x_label = "batch size", .y_label = "test accuracy",
            .log_x = true, .percent_y = true};
}

}  // namespace

TEST_CASE("xml checker accepts well-formed svg", "[svg_chart]") {
    CHECK(svg_problem(R"(<svg xmlns="http://www.w3.org/2000/svg"/>)") == "");
    CHECK(svg_problem("<?xml version=\"1.0\"?>\n<!-- c -->\n<svg xmlns='http://www.w3.org/2000/svg' a = \"1\">"
                      "<g><text>a &amp; b &lt; &#38; &#x3C;</text></g><![CDATA[<raw>]]></svg>\n") == "");
}

TEST_CASE("xml checker rejects broken documents", "[svg_chart]") {
    const std::string ns = "<svg xmlns=\"http://www.w3.org/2000/svg\">";
    const std::vector<std::string> broken = {
        "",                                                   // no root
        ns,                                                   // never closed
        ns + "<g></svg>",                                     // child never closed
        ns + "<g><text></g></text></svg>",                    // crossed nesting
        ns + "</g></svg>",                                    // closes nothing
        ns + "<rect width=10/></svg>",                        // unquoted attribute
        ns + "<rect width=\"10/></svg>",                      // unterminated value
        ns + "<rect a=\"1\" a=\"2\"/></svg>",                 // repeated attribute
        ns + "<rect a=\"1\"b=\"2\"/></svg>",                  // no space between attributes
        ns + "<rect a=\"x<y\"/></svg>",                       // '<' in attribute
        ns + "<text>a & b</text></svg>",                      // bare '&'
        ns + "<text>&nbsp;</text></svg>",                     // entity XML does not define
        ns + "<text>&#0;</text></svg>",                       // invalid character reference
        ns + "<text a=\"&foo;\"/></svg>",                     // bad entity in an attribute
        ns + "<text>a < b</text></svg>",                      // bare '<'
        ns + "<!-- a -- b --></svg>",                         // '--' in a comment
        ns + "</svg><svg xmlns=\"http://www.w3.org/2000/svg\"/>",  // two roots
        ns + "</svg>trailing",                                // text after the root
        "<html xmlns=\"http://www.w3.org/2000/svg\"/>",       // root is not svg
        "<svg width=\"1\"/>",                                 // no namespace: browsers show it as text
    };
    for (const auto& doc : broken) {
        INFO(doc);
        CHECK(svg_problem(doc) != "");
    }
}

TEST_CASE("log-x chart with error bars: batch sizes as ticks, legend, percent axis", "[svg_chart]") {
    const std::string svg = line_chart_svg(norm_series(), accuracy_options());
    require_clean_svg(svg);
    for (const char* tick : {"4", "16", "64", "256"}) CHECK(has_text(svg, tick));
    for (const char* label : {"LayerNorm", "BatchNorm", "RMSNorm", "none"}) CHECK(has_text(svg, label));
    CHECK(has_text(svg, "Test accuracy vs batch size"));
    CHECK(has_text(svg, "batch size"));
    CHECK(has_text(svg, "test accuracy"));
    CHECK(std::regex_search(svg, std::regex(">9[0-9](\\.[0-9])?%</text>")));
    CHECK(svg.find("class=\"legend\"") != std::string::npos);
    // Four points per series, each with a bar and two caps.
    CHECK(error_bar_lines(svg) == 4 * 4 * 3);
}

TEST_CASE("charts are deterministic and print short numbers", "[svg_chart]") {
    const std::string svg = line_chart_svg(norm_series(), accuracy_options());
    CHECK(svg == line_chart_svg(norm_series(), accuracy_options()));
    CHECK_FALSE(std::regex_search(svg, std::regex("[0-9]\\.[0-9]{3}")));
}

TEST_CASE("linear x axis gets 1-2-5 ticks", "[svg_chart]") {
    const Series s{"loss", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2.3, 1.1, 0.7, 0.5, 0.4, 0.35, 0.3, 0.28, 0.26, 0.25, 0.24}, {}};
    const std::string svg = line_chart_svg({s}, {.title = "loss", .x_label = "epoch", .y_label = "loss"});
    require_clean_svg(svg);
    for (const char* tick : {"0", "2", "4", "6", "8", "10"}) CHECK(has_text(svg, tick));
    CHECK_FALSE(has_text(svg, "3"));
    CHECK(has_text(svg, "0.5"));
    CHECK(has_text(svg, "2.0"));
    CHECK(error_bar_lines(svg) == 0);  // none asked for
}

TEST_CASE("integer_x: an axis of epochs gets whole-number ticks only", "[svg_chart]") {
    for (const std::vector<double>& epochs : {std::vector<double>{1, 2}, std::vector<double>{1, 2, 3, 4}}) {
        const Series s{"acc", epochs, std::vector<double>(epochs.size(), 0.9), {}};
        const std::string svg = line_chart_svg({s}, {.x_label = "epoch", .integer_x = true});
        require_clean_svg(svg);
        INFO(epochs.size() << " epochs");
        for (double e : epochs) CHECK(has_text(svg, std::to_string(static_cast<int>(e))));
        for (const char* fraction : {"1.5", "2.5", "0.5", "1.2"}) CHECK_FALSE(has_text(svg, fraction));
    }
    // Without it, the same two points get 1-2-5 steps between them.
    const Series s{"acc", {1, 2}, {0.9, 0.9}, {}};
    CHECK(has_text(line_chart_svg({s}, {.x_label = "epoch"}), "1.2"));
}

TEST_CASE("log x axis with many values uses powers of ten", "[svg_chart]") {
    Series s{"time", {}, {}, {}};
    for (double x = 1; x <= 4096; x *= 2) s.x.push_back(x), s.y.push_back(1.0 / x);
    const std::string svg = line_chart_svg({s}, {.log_x = true});
    require_clean_svg(svg);
    for (const char* tick : {"1", "10", "100", "1000"}) CHECK(has_text(svg, tick));
    CHECK_FALSE(has_text(svg, "64"));
}

TEST_CASE("text is escaped everywhere", "[svg_chart]") {
    const std::string nasty = "a<b & \"c\"";
    const std::string svg = line_chart_svg({{nasty, {1, 2}, {3, 4}, {}}},
                                           {.title = nasty, .x_label = nasty, .y_label = nasty});
    require_clean_svg(svg);
    CHECK(svg.find(nasty) == std::string::npos);
    const std::string escaped = "a&lt;b &amp; &quot;c&quot;";
    size_t count = 0;
    for (size_t at = svg.find(escaped); at != std::string::npos; at = svg.find(escaped, at + 1)) ++count;
    CHECK(count == 4);  // title, both axis labels, legend
}

TEST_CASE("edge cases draw without NaN", "[svg_chart]") {
    SECTION("single point") {
        const std::string svg = line_chart_svg({{"one", {64}, {0.97}, {0.01}}}, accuracy_options());
        require_clean_svg(svg);
        CHECK(has_text(svg, "64"));
        CHECK(svg.find("<polyline") == std::string::npos);  // nothing to join
    }
    SECTION("all-equal y") {
        require_clean_svg(line_chart_svg({{"flat", {1, 2, 3}, {0.5, 0.5, 0.5}, {}}}, {}));
        require_clean_svg(line_chart_svg({{"zero", {1, 2, 3}, {0, 0, 0}, {}}}, {.log_x = true}));
    }
    SECTION("empty series list") {
        const std::string svg = line_chart_svg({}, {.title = "nothing", .log_x = true});
        require_clean_svg(svg);
        CHECK(has_text(svg, "no data"));
        CHECK(svg.find("class=\"legend\"") == std::string::npos);
    }
    SECTION("series with no points") {
        const std::string svg = line_chart_svg({{"empty", {}, {}, {}}}, {});
        require_clean_svg(svg);
        CHECK(has_text(svg, "no data"));
        CHECK(has_text(svg, "empty"));
    }
    SECTION("NaN and infinite values are skipped") {
        const Series s{"gappy", {4, 16, kNaN, 64, 128, 256, kInf}, {0.9, kNaN, 0.8, 0.7, -kInf, 0.6, 0.5},
                       {0.01, 0.01, 0.01, kNaN, 0.01, kInf, 0.01}};
        const std::string svg = line_chart_svg({s}, accuracy_options());
        require_clean_svg(svg);
        CHECK(has_text(svg, "4"));
        CHECK_FALSE(has_text(svg, "16"));  // its y is NaN, so it is not a data tick
        CHECK(has_text(svg, "256"));
    }
    SECTION("only non-finite values") {
        const std::string svg = line_chart_svg({{"bad", {kNaN, kInf}, {1, 2}, {}}}, {});
        require_clean_svg(svg);
        CHECK(has_text(svg, "no data"));
    }
    SECTION("non-positive x on a log axis is skipped") {
        const std::string svg = line_chart_svg({{"s", {0, -1, 8, 32}, {1, 2, 3, 4}, {}}}, {.log_x = true});
        require_clean_svg(svg);
        CHECK(has_text(svg, "8"));
        CHECK(has_text(svg, "32"));
    }
    SECTION("huge and tiny values") {
        require_clean_svg(line_chart_svg({{"s", {1e-6, 2e-6}, {1e12, 3e12}, {}}}, {}));
        require_clean_svg(line_chart_svg({{"s", {1, 2}, {1.0, 1.0 + 1e-12}, {}}}, {}));
    }
}

TEST_CASE("explicit y range is honoured", "[svg_chart]") {
    const std::string svg = line_chart_svg(norm_series(), {.y_min = 0.9, .y_max = 1.0, .percent_y = true});
    require_clean_svg(svg);
    CHECK(has_text(svg, "90%"));
    CHECK(has_text(svg, "100%"));
    CHECK_FALSE(has_text(svg, "110%"));
    // Only one bound, on the far side of the data: the chart still has a valid range.
    require_clean_svg(line_chart_svg(norm_series(), {.y_min = 5.0}));
}

TEST_CASE("bad chart input throws normnet::Error", "[svg_chart]") {
    CHECK_THROWS_WITH(line_chart_svg({{"s", {1, 2}, {1}, {}}}, {}), Catch::Contains("'s'") && Catch::Contains("x has 2"));
    CHECK_THROWS_WITH(line_chart_svg({{"s", {1, 2}, {1, 2}, {0.1}}}, {}), Catch::Contains("y_err has 1"));
    CHECK_THROWS_AS(line_chart_svg({}, {.y_min = 1.0, .y_max = 0.5}), normnet::Error);
    CHECK_THROWS_AS(line_chart_svg({}, {.y_min = kNaN}), normnet::Error);
    CHECK_THROWS_WITH(line_chart_svg({}, {.width = 10}), Catch::Contains("too small"));
}
