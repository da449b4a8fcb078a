"""Survey cases: scipy.signal -- filters (with respect to the signal and to the filter
coefficients), convolutions, smoothing, resampling, spectra, windows."""
import numpy as np
from scipy import signal

from . import Table

T = Table("scipy.signal")
add = T.add
SIG = np.sin(np.linspace(0.0, 3.0, 12)) + np.linspace(0.0, 0.5, 12)
LONG = np.sin(np.linspace(0.0, 6.0, 40)) + 0.1 * np.cos(np.linspace(0.0, 31.0, 40))
B = np.array([0.5, 0.3])
A = np.array([1.0, -0.4])
SOS = signal.butter(2, 0.3, output="sos")
K = np.array([0.2, 0.5, 0.3])
IMG = np.arange(16.0).reshape(4, 4) ** 0.5
X = 0.7

add("lfilter signal", lambda x: signal.lfilter(B, A, x), SIG)
add("lfilter numerator", lambda b: signal.lfilter(b, A, SIG), B)
add("lfilter denominator", lambda a: signal.lfilter(B, np.array([1.0, a[1]]), SIG), A)
add("lfilter zi", lambda z: signal.lfilter(B, A, SIG, zi=z)[0], np.array([0.3]))
add("lfilter_zi", lambda b: signal.lfilter_zi(b, A), B)
add("sosfilt", lambda x: signal.sosfilt(SOS, x), SIG)
add("sosfilt numerators", lambda b: signal.sosfilt(np.hstack([b.reshape(-1, 3), SOS[:, 3:]]), SIG),
    SOS[:, :3].ravel())
add("filtfilt", lambda x: signal.filtfilt(B, A, x), LONG)
add("sosfiltfilt", lambda x: signal.sosfiltfilt(SOS, x), LONG)
add("convolve", lambda x: signal.convolve(x, K), SIG)
add("convolve direct", lambda x: signal.convolve(x, K, method="direct"), SIG)
add("convolve kernel", lambda k: signal.convolve(SIG, k, mode="same"), K)
add("fftconvolve", lambda x: signal.fftconvolve(x, K), SIG)
add("oaconvolve", lambda x: signal.oaconvolve(x, K), SIG)
add("correlate", lambda x: signal.correlate(x, K, mode="valid"), SIG)
add("convolve2d", lambda x: signal.convolve2d(x, np.array([[0.2, 0.1], [0.3, 0.4]])), IMG)
add("correlate2d", lambda x: signal.correlate2d(x, np.array([[0.2, 0.1], [0.3, 0.4]]), mode="same"), IMG)
add("savgol_filter", lambda x: signal.savgol_filter(x, 5, 2), SIG)
add("savgol_filter deriv", lambda x: signal.savgol_filter(x, 5, 2, deriv=1), SIG)
add("savgol_coeffs", lambda x: signal.savgol_coeffs(5, 2) @ x[:5], SIG)
add("medfilt", lambda x: signal.medfilt(x, 3), SIG, step=1e-4)
add("detrend", signal.detrend, SIG)
add("detrend constant", lambda x: signal.detrend(x, type="constant"), SIG)
add("resample", lambda x: signal.resample(x, 16), SIG)
add("resample_poly", lambda x: signal.resample_poly(x, 2, 1), SIG)
add("decimate", lambda x: signal.decimate(x, 2), LONG)
add("upfirdn", lambda x: signal.upfirdn([1.0, 0.5], x, up=2), SIG)
add("hilbert envelope", lambda x: np.abs(signal.hilbert(x)), SIG)
add("freqz magnitude", lambda b: np.abs(signal.freqz(b, A, worN=4)[1]), B)
add("freqz_sos numerators",
    lambda b: np.abs(signal.freqz_sos(np.hstack([b.reshape(-1, 3), SOS[:, 3:]]), worN=4)[1]),
    SOS[:, :3].ravel())
add("periodogram", lambda x: signal.periodogram(x)[1], SIG)
add("welch", lambda x: signal.welch(x, nperseg=8)[1], SIG)
add("csd", lambda x: signal.csd(x, SIG[::-1], nperseg=8)[1].real, SIG)
add("stft magnitude", lambda x: np.abs(signal.stft(x, nperseg=4)[2]), SIG)
add("gaussian window std", lambda s: signal.windows.gaussian(5, s), 1.3)
add("get_window gaussian", lambda s: signal.get_window(("gaussian", s), 5), 1.3)
add("tukey window alpha", lambda a: signal.windows.tukey(7, a), 0.5)
add("chirp at t", lambda t: signal.chirp(t, f0=1.0, t1=1.0, f1=3.0), np.array([0.1, 0.4, 0.8]))
add("gausspulse at t", lambda t: signal.gausspulse(t, fc=2.0), np.array([0.1, 0.4, 0.8]))
add("bilinear numerator", lambda b: signal.bilinear(b, [1.0, 2.0], fs=10.0)[0], B)
add("tf2zpk poles", lambda a: np.sort(signal.tf2zpk([1.0], np.array([1.0, a[0], a[1]]))[1].real),
    np.array([3.0, 2.0]))
add("zpk2tf", lambda z: signal.zpk2tf(z, [0.5, 0.2], 1.0)[0], np.array([0.3, -0.4]))
add("lsim output", lambda u: signal.lsim(([1.0], [1.0, 1.0]), u, np.linspace(0, 1, 12))[1], SIG)
add("cspline1d", signal.cspline1d, SIG)
add("gauss_spline", lambda x: signal.gauss_spline(x, 3), np.array([0.1, 0.4, 0.8]))
add("wiener", lambda x: signal.wiener(x, 3), SIG)
add("max of find_peaks heights", lambda x: x[signal.find_peaks(x)[0]], SIG * np.cos(np.arange(12.0)))
