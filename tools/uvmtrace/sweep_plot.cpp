#include "sweep_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace uvmp::tools::simulation {
namespace {

// Lines that coincide stay apart by their markers: each shape is hollow and
// smaller than the one before, so it sits inside it.
enum class Marker { Circle, Square, Triangle, Diamond, Cross };

struct LineStyle {
    const char* colour;
    const char* dash; // empty: solid
    double width;
    Marker marker;
    double marker_radius;
};

constexpr LineStyle kStyles[] = {
    {"#d62728", "", 3.0, Marker::Circle, 7.5},     {"#1f77b4", "9 4", 2.5, Marker::Square, 6.0},
    {"#2ca02c", "2 3", 2.0, Marker::Triangle, 5.0}, {"#9467bd", "12 3 3 3", 2.0, Marker::Diamond, 4.0},
    {"#ff7f0e", "5 2", 1.5, Marker::Cross, 3.0},
};
constexpr const char* kBoundColour = "#555";
constexpr const char* kBoundDash = "6 4";

std::string xml_escaped(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else out += c;
    }
    return out;
}

// Rounds a span up to 1, 2 or 5 times a power of ten for tick spacing.
double nice_step(double span, int ticks) {
    const double raw = span / ticks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * power) return m * power;
    return 10.0 * power;
}

std::string marker_svg(Marker marker, double x, double y, double r, const char* colour) {
    const std::string stroke = fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"", colour);
    switch (marker) {
    case Marker::Circle: return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" {}/>\n", x, y, r, stroke);
    case Marker::Square:
        return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" {}/>\n", x - r, y - r, 2 * r,
                           2 * r, stroke);
    case Marker::Triangle:
        return fmt::format("<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f} Z\" {}/>\n", x, y - r, x + r, y + r * 0.8,
                           x - r, y + r * 0.8, stroke);
    case Marker::Diamond:
        return fmt::format("<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f} Z\" {}/>\n", x, y - r,
                           x + r, y, x, y + r, x - r, y, stroke);
    case Marker::Cross:
        return fmt::format("<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} M{:.1f} {:.1f} L{:.1f} {:.1f}\" {}/>\n", x - r, y - r,
                           x + r, y + r, x - r, y + r, x + r, y - r, stroke);
    }
    return {};
}

std::string dash_attribute(const char* dash) {
    return *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : std::string();
}

// The label, and the earlier line it lies on at every budget, if any.
std::string legend_label(const std::vector<SweepLine>& lines, size_t index) {
    for (size_t other = 0; other < index; ++other)
        if (lines[other].step_seconds == lines[index].step_seconds)
            return fmt::format("{} (= {})", lines[index].label, lines[other].label);
    return lines[index].label;
}

class SweepPlot {
public:
    SweepPlot(const std::vector<uint64_t>& budgets, const std::vector<SweepLine>& lines, const SweepLine& bound)
        : budgets_(budgets) {
        x_min_ = static_cast<double>(budgets.front()) / kGiB;
        x_max_ = static_cast<double>(budgets.back()) / kGiB;
        if (x_max_ <= x_min_) x_max_ = x_min_ + 1e-9;
        for (const SweepLine& line : lines)
            for (double s : line.step_seconds) y_max_ = std::max(y_max_, s * 1e3);
        for (double s : bound.step_seconds) y_max_ = std::max(y_max_, s * 1e3);
        if (y_max_ <= 0) y_max_ = 1;
        y_step_ = nice_step(y_max_, 6);
        y_max_ = std::ceil(y_max_ / y_step_) * y_step_;
    }

    std::string frame(uint64_t footprint, const std::string& title) const {
        std::string svg = fmt::format(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            kWidth, kHeight);
        svg += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
                           kLeft + plot_w() / 2, xml_escaped(title));
        svg += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" stroke=\"black\" fill=\"none\"/>\n", kLeft, kTop,
                           kTop + plot_h(), kLeft + plot_w());
        for (double y = 0; y <= y_max_ + y_step_ / 2; y += y_step_) {
            svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n", kLeft, py(y),
                               kLeft + plot_w());
            svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n", kLeft - 6, py(y) + 4, y);
        }
        const double x_step = nice_step(x_max_ - x_min_, 6);
        for (double x = std::ceil(x_min_ / x_step) * x_step; x <= x_max_ + x_step * 1e-6; x += x_step) {
            svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"black\"/>\n", px(x),
                               kTop + plot_h(), kTop + plot_h() + 5);
            svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", px(x),
                               kTop + plot_h() + 18, x);
        }
        const double f = static_cast<double>(footprint) / kGiB;
        if (footprint > 0 && f >= x_min_ && f <= x_max_)
            svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#888\" "
                               "stroke-dasharray=\"4 3\"/>\n<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" "
                               "fill=\"#555\">footprint</text>\n",
                               px(f), kTop, kTop + plot_h(), kTop - 4);
        svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPU memory budget (GiB)</text>\n",
                           kLeft + plot_w() / 2, kHeight - 18);
        svg += fmt::format("<text transform=\"translate(20 {}) rotate(-90)\" text-anchor=\"middle\">step time "
                           "(ms)</text>\n",
                           kTop + plot_h() / 2);
        return svg;
    }

    std::string polyline(const SweepLine& line, const char* colour, const char* dash, double width) const {
        std::string points;
        for (size_t k = 0; k < budgets_.size(); ++k)
            points += fmt::format("{:.1f},{:.1f} ", x_of(k), py(line.step_seconds[k] * 1e3));
        return fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n", points, colour,
                           width, dash_attribute(dash));
    }

    std::string markers(const SweepLine& line, const LineStyle& style) const {
        std::string svg;
        for (size_t k = 0; k < budgets_.size(); ++k)
            svg += marker_svg(style.marker, x_of(k), py(line.step_seconds[k] * 1e3), style.marker_radius, style.colour);
        return svg;
    }

    std::string legend_entry(size_t row, const std::string& label, const char* colour, const char* dash, double width,
                             const LineStyle* style) const {
        const double x = kLeft + plot_w() + 16, y = kTop + 10 + 22.0 * static_cast<double>(row);
        std::string svg = fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
                                      "stroke-width=\"{4}\"{5}/>\n",
                                      x, y, x + 34, colour, width, dash_attribute(dash));
        if (style) svg += marker_svg(style->marker, x + 17, y, style->marker_radius, colour);
        svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x + 42, y + 4, xml_escaped(label));
        return svg;
    }

private:
    static constexpr double kWidth = 820, kHeight = 460, kLeft = 80, kRight = 250, kTop = 40, kBottom = 60;
    static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    static double plot_w() { return kWidth - kLeft - kRight; }
    static double plot_h() { return kHeight - kTop - kBottom; }
    double px(double x) const { return kLeft + (x - x_min_) / (x_max_ - x_min_) * plot_w(); }
    double py(double y) const { return kTop + plot_h() - y / y_max_ * plot_h(); }
    double x_of(size_t k) const { return px(static_cast<double>(budgets_[k]) / kGiB); }

    const std::vector<uint64_t>& budgets_;
    double x_min_ = 0, x_max_ = 0, y_max_ = 0, y_step_ = 1;
};

} // namespace

std::string sweep_svg(const std::vector<uint64_t>& budgets, const std::vector<SweepLine>& lines, const SweepLine& bound,
                      uint64_t footprint, const std::string& title) {
    const SweepPlot plot(budgets, lines, bound);
    std::string svg = plot.frame(footprint, title);
    auto style_of = [](size_t p) -> const LineStyle& { return kStyles[p % std::size(kStyles)]; };
    for (size_t p = 0; p < lines.size(); ++p)
        svg += plot.polyline(lines[p], style_of(p).colour, style_of(p).dash, style_of(p).width);
    svg += plot.polyline(bound, kBoundColour, kBoundDash, 1.5);
    // Markers above every line, so that no line hides another's points.
    for (size_t p = 0; p < lines.size(); ++p) svg += plot.markers(lines[p], style_of(p));
    for (size_t p = 0; p < lines.size(); ++p)
        svg += plot.legend_entry(p, legend_label(lines, p), style_of(p).colour, style_of(p).dash, style_of(p).width,
                                 &style_of(p));
    svg += plot.legend_entry(lines.size(), bound.label, kBoundColour, kBoundDash, 1.5, nullptr);
    svg += "</svg>\n";
    return svg;
}

} // namespace uvmp::tools::simulation
